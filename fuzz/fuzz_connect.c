/*
 * libFuzzer target for the egress proxy's parsers: the request head
 * (CONNECT and absolute-form HTTP), the Proxy-Authorization check, host
 * normalization and the lockdown numeric test, the HTTP rewrite, the body
 * framing that ends a plain-HTTP request, and the TLS ClientHello / SNI
 * walk. The first input byte picks how the rest is split, so one corpus
 * exercises every parser. Properties checked beyond "no crash": a
 * normalized host is lowercase, dot-free at the end and normalizes to
 * itself; a verified SNI (and a differing later name of its list) is a
 * normalized host; the body framing takes no more than it is given, gives
 * the same answer however the bytes are split, and stays ended.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "egress/connect.h"

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

/* The framing of a body: the head's own (mode bit 2 → chunked, else the
 * first 4 bytes as a Content-Length), fed whole and split at the byte
 * after that. */
static void body_check(uint8_t mode, const uint8_t *data, size_t size)
{
    struct sbx_request rq;
    memset(&rq, 0, sizeof rq);
    rq.body = (mode & 4) ? SBX_BODY_CHUNKED : SBX_BODY_LENGTH;
    if (rq.body == SBX_BODY_LENGTH && size >= 4) {
        rq.content_length =
            (uint64_t)data[0] << 24 | (uint64_t)data[1] << 16 | (uint64_t)data[2] << 8 | data[3];
        data += 4;
        size -= 4;
    }
    size_t cut = size ? (size_t)(mode >> 3) % (size + 1) : 0;
    struct sbx_body a, b;
    sbx_body_init(&a, &rq);
    sbx_body_init(&b, &rq);
    size_t ta = 0, t1 = 0, t2 = 0;
    int ra = sbx_body_feed(&a, (const char *)data, size, &ta);
    int rb = sbx_body_feed(&b, (const char *)data, cut, &t1);
    if (rb == 0)
        rb = sbx_body_feed(&b, (const char *)data + cut, size - cut, &t2);
    if (ta > size || t1 > cut || t2 > size - cut)
        abort();
    if (ra != rb || (ra == 1 && ta != t1 + t2) || (ra == -1 && ta != 0))
        abort();
    size_t again = 1;
    if (ra != 0 && (sbx_body_feed(&a, "x", 1, &again) != ra || again != 0))
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
            if (h.sni_other[0] &&
                (sbx_host_normalize(h.sni_other, 0, again) != 0 ||
                 strcmp(again, h.sni_other) != 0 || strcmp(h.sni_other, h.sni) == 0))
                abort();
        }
        return 0;
    }
    if (mode & 2) {
        body_check(mode, data, size);
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
