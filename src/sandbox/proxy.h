/*
 * sandbox/proxy.h — the egress proxy moved to its own module, src/egress/
 * (egress/proxy.h, docs/architecture.md "The module stack").
 *
 * Why this header is still here: src/gateway/jailed.c includes it, and that
 * directory is being changed by another branch; the include there moves to
 * "egress/proxy.h" when those branches meet, and this file goes then.
 * Guarantees: it declares nothing of its own.
 */
#ifndef AS_SANDBOX_PROXY_H
#define AS_SANDBOX_PROXY_H

#include "egress/proxy.h"

#endif
