/*
 * Test helper: builds TLS ClientHello records byte by byte, so the SNI
 * checks can be driven with exact, hostile shapes (fragmented records,
 * trailing bytes, duplicate extensions, ECH).
 */
#ifndef AS_TESTS_SANDBOX_HELLO_H
#define AS_TESTS_SANDBOX_HELLO_H

#include <stdint.h>
#include <string.h>

struct th_buf {
    uint8_t b[20000];
    size_t n;
};

static inline void th_u8(struct th_buf *t, unsigned v)
{
    t->b[t->n++] = (uint8_t)v;
}
static inline void th_u16(struct th_buf *t, unsigned v)
{
    th_u8(t, v >> 8);
    th_u8(t, v & 0xff);
}
static inline void th_bytes(struct th_buf *t, const void *p, size_t n)
{
    memcpy(t->b + t->n, p, n);
    t->n += n;
}

/* A ClientHello handshake message (type+len+body). sni NULL = no server_name;
 * names separated by '\n' are entries of one server_name list ("a\nb" =
 * [a, b]); ech adds extension 0xfe0d; dup_sni repeats the extension. no_ext:
 * body ends after compression. */
static inline size_t th_handshake(uint8_t *out, const char *sni, int ech, int dup_sni, int no_ext)
{
    struct th_buf body = {.n = 0};
    th_u16(&body, 0x0303);
    for (int i = 0; i < 32; i++)
        th_u8(&body, (unsigned)i);
    th_u8(&body, 0);  /* session id */
    th_u16(&body, 4); /* cipher suites */
    th_u16(&body, 0x1301);
    th_u16(&body, 0x1302);
    th_u8(&body, 1); /* compression */
    th_u8(&body, 0);
    if (!no_ext) {
        struct th_buf ext = {.n = 0};
        for (int k = 0; k < (dup_sni ? 2 : 1) && sni; k++) {
            struct th_buf list = {.n = 0};
            for (const char *p = sni;;) {
                const char *nl = strchr(p, '\n');
                size_t l = nl ? (size_t)(nl - p) : strlen(p);
                th_u8(&list, 0);
                th_u16(&list, (unsigned)l);
                th_bytes(&list, p, l);
                if (!nl)
                    break;
                p = nl + 1;
            }
            th_u16(&ext, 0x0000);
            th_u16(&ext, (unsigned)(list.n + 2));
            th_u16(&ext, (unsigned)list.n);
            th_bytes(&ext, list.b, list.n);
        }
        th_u16(&ext, 0x002b); /* supported_versions */
        th_u16(&ext, 3);
        th_u8(&ext, 2);
        th_u16(&ext, 0x0304);
        if (ech) {
            th_u16(&ext, 0xfe0d);
            th_u16(&ext, 2);
            th_u16(&ext, 0xabcd);
        }
        th_u16(&body, (unsigned)ext.n);
        th_bytes(&body, ext.b, ext.n);
    }
    out[0] = 0x01;
    out[1] = (uint8_t)(body.n >> 16);
    out[2] = (uint8_t)(body.n >> 8);
    out[3] = (uint8_t)body.n;
    memcpy(out + 4, body.b, body.n);
    return body.n + 4;
}

/* One record holding the whole handshake (plus `extra` stray bytes inside). */
static inline size_t th_hello(uint8_t *out, const char *sni, int ech, int extra)
{
    uint8_t hs[18000];
    size_t hn = th_handshake(hs, sni, ech, 0, 0);
    size_t rl = hn + (size_t)extra;
    out[0] = 0x16;
    out[1] = 0x03;
    out[2] = 0x01;
    out[3] = (uint8_t)(rl >> 8);
    out[4] = (uint8_t)rl;
    memcpy(out + 5, hs, hn);
    memset(out + 5 + hn, 0, (size_t)extra);
    return 5 + rl;
}

/* The handshake split across two records: the first covers half. */
static inline size_t th_fragmented(uint8_t *out, const char *sni)
{
    uint8_t hs[18000];
    size_t hn = th_handshake(hs, sni, 0, 0, 0);
    size_t half = hn / 2;
    size_t n = 0;
    out[n++] = 0x16;
    out[n++] = 0x03;
    out[n++] = 0x01;
    out[n++] = (uint8_t)(half >> 8);
    out[n++] = (uint8_t)half;
    memcpy(out + n, hs, half);
    n += half;
    out[n++] = 0x16;
    out[n++] = 0x03;
    out[n++] = 0x01;
    out[n++] = (uint8_t)((hn - half) >> 8);
    out[n++] = (uint8_t)(hn - half);
    memcpy(out + n, hs + half, hn - half);
    return n + hn - half;
}

#endif
