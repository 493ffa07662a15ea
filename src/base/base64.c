/* base64 (base64.h): the encoder and the strict decoder. */
#include <stdbool.h>

#include "base/base64.h"

static const char base64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void base64_encode(const void *data, size_t len, strbuf *out)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)p[i] << 16;
        if (i + 1 < len)
            v |= (unsigned)p[i + 1] << 8;
        if (i + 2 < len)
            v |= p[i + 2];
        sb_addc(out, base64_alphabet[v >> 18 & 63]);
        sb_addc(out, base64_alphabet[v >> 12 & 63]);
        sb_addc(out, i + 1 < len ? base64_alphabet[v >> 6 & 63] : '=');
        sb_addc(out, i + 2 < len ? base64_alphabet[v & 63] : '=');
    }
}

/* The 6-bit value of c, or -1 outside the alphabet ('=' included). */
static int base64_value(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

int base64_decode(const char *text, size_t len, strbuf *out)
{
    if (len % 4)
        return -1;
    size_t start = out->len;
    for (size_t i = 0; i < len; i += 4) {
        bool last = i + 4 == len;
        size_t pad = 0;
        if (last && text[i + 3] == '=')
            pad = text[i + 2] == '=' ? 2 : 1;
        unsigned v = 0;
        for (size_t k = 0; k < 4; k++) {
            int d = k >= 4 - pad ? 0 : base64_value(text[i + k]);
            if (d < 0)
                goto bad;
            v = v << 6 | (unsigned)d;
        }
        /* The bits a padded group leaves unused must be zero. */
        if ((pad == 1 && (v & 0xff)) || (pad == 2 && (v & 0xffff)))
            goto bad;
        sb_addc(out, (char)(v >> 16 & 0xff));
        if (pad < 2)
            sb_addc(out, (char)(v >> 8 & 0xff));
        if (pad < 1)
            sb_addc(out, (char)(v & 0xff));
    }
    return 0;
bad:
    sb_setlen(out, start);
    return -1;
}
