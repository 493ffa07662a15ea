/*
 * aud_parse_since — the --since value of `audit --calls` (calls_table.h):
 * a duration back from now, or an ISO 8601 date or time. Written out by
 * hand (no strptime/timegm) so that every accepted form is the one
 * docs/audit.md lists, checked field by field, on every libc alike.
 */
#include <ctype.h>
#include <string.h>

#include "audit/calls_table.h"

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar. */
static long long days_from_civil(long long y, unsigned m, unsigned d)
{
    y -= m <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (long long)doe - 719468;
}

static unsigned days_in_month(long long y, unsigned m)
{
    static const unsigned dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : dm[m - 1];
}

/* Exactly n digits at *p: their value, *p moved past them; -1 otherwise. */
static long digits(const char **p, int n)
{
    long v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i]))
            return -1;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    return v;
}

static int duration(const char *s, long long now, long long *out)
{
    size_t n = strspn(s, "0123456789");
    if (n == 0 || n > 9 || strlen(s) != n + 1)
        return -1;
    long long v = 0;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (s[i] - '0');
    long long unit;
    switch (s[n]) {
    case 's':
        unit = 1;
        break;
    case 'm':
        unit = 60;
        break;
    case 'h':
        unit = 3600;
        break;
    case 'd':
        unit = 86400;
        break;
    case 'w':
        unit = 7 * 86400;
        break;
    default:
        return -1;
    }
    *out = now - v * unit;
    return 0;
}

static int iso(const char *s, long long *out)
{
    const char *p = s;
    long y = digits(&p, 4);
    if (y < 0 || *p++ != '-')
        return -1;
    long mo = digits(&p, 2);
    if (mo < 1 || mo > 12 || *p++ != '-')
        return -1;
    long d = digits(&p, 2);
    if (d < 1 || d > (long)days_in_month(y, (unsigned)mo))
        return -1;
    long h = 0, mi = 0, sec = 0, off = 0;
    if (*p == 'T' || *p == 't' || *p == ' ') {
        p++;
        h = digits(&p, 2);
        if (h < 0 || h > 23 || *p++ != ':')
            return -1;
        mi = digits(&p, 2);
        if (mi < 0 || mi > 59)
            return -1;
        if (*p == ':') {
            p++;
            sec = digits(&p, 2);
            if (sec < 0 || sec > 59)
                return -1;
        }
        if (*p == 'Z' || *p == 'z') {
            p++;
        } else if (*p == '+' || *p == '-') {
            int sign = *p++ == '-' ? -1 : 1;
            long oh = digits(&p, 2);
            if (oh < 0 || oh > 23 || *p++ != ':')
                return -1;
            long om = digits(&p, 2);
            if (om < 0 || om > 59)
                return -1;
            off = sign * (oh * 3600 + om * 60);
        }
    }
    if (*p)
        return -1;
    *out = days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 + sec - off;
    return 0;
}

int aud_parse_since(const char *s, long long now, long long *out, struct as_err *err)
{
    if (s && (duration(s, now, out) == 0 || iso(s, out) == 0))
        return 0;
    return as_err_set(err,
                      "--since '%s' is neither a duration (90s, 30m, 1h, 2d, 1w) nor an ISO "
                      "8601 time (2026-12-01, 2026-12-01T09:30:00Z, …+01:00)",
                      s ? s : "");
}
