/*
 * libFuzzer target for the egress proxy's parsers: the request head
 * (CONNECT and absolute-form HTTP), the Proxy-Authorization check, host
 * normalization and the lockdown numeric test, the HTTP rewrite, and the
 * TLS ClientHello / SNI walk. The first input byte picks how the rest is
 * split, so one corpus exercises every parser. Properties checked beyond
 * "no crash": a normalized host is lowercase, dot-free at the end and
 * normalizes to itself; a verified SNI is a normalized host.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "sandbox/connect.h"

static void check_host(const char *h)
{
    char out[SBX_HOST_MAX], again[SBX_HOST_MAX];
    if (sbx_host_normalize(h, 0, out) == 0) {
        size_t n = strlen(out);
        if (n == 0 || out[n - 1] == '.')
            abort();
        for (size_t i = 0; i < n; i++)
            if (out[i] >= 'A' && out[i] <= 'Z')
                abort();
        if (sbx_host_normalize(out, 0, again) != 0 || strcmp(out, again) != 0)
            abort();
        (void)sbx_host_is_numeric(out);
    }
    if (sbx_host_normalize(h, 1, out) == 0 && sbx_host_normalize(out, 1, again) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    uint8_t mode = data[0];
    data++;
    size--;
    if (mode & 1) {
        struct sbx_hello h;
        enum sbx_tls t = sbx_tls_client_hello(data, size, &h);
        if (t == SBX_TLS_SNI) {
            char again[SBX_HOST_MAX];
            if (sbx_host_normalize(h.sni, 0, again) != 0 || strcmp(again, h.sni) != 0)
                abort();
        }
        return 0;
    }
    char *buf = malloc(size + 1);
    memcpy(buf, data, size);
    buf[size] = '\0';
    size_t end = sbx_head_end(buf, size);
    struct sbx_request req;
    const char *why = NULL;
    if (sbx_parse_head(buf, end ? end : size, &req, &why) == 0) {
        check_host(req.host);
        (void)sbx_head_auth_ok(buf, req.head_len, "Basic YWdlbnRzdGFjazp4");
        if (req.kind == SBX_REQ_HTTP) {
            char norm[SBX_HOST_MAX];
            if (sbx_host_normalize(req.host, req.host_bracketed, norm) == 0) {
                strbuf out = SB_INIT;
                sbx_http_rewrite(buf, &req, norm, &out);
                /* The rewrite never emits a bare CR or LF. */
                for (size_t i = 0; i < out.len; i++)
                    if ((out.buf[i] == '\n' && (i == 0 || out.buf[i - 1] != '\r')) ||
                        (out.buf[i] == '\r' && (i + 1 >= out.len || out.buf[i + 1] != '\n')))
                        abort();
                sb_release(&out);
            }
        }
    } else if (!why) {
        abort();
    }
    check_host(buf);
    free(buf);
    return 0;
}
