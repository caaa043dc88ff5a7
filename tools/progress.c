/*
 * One progress line on stderr for long work (golden verify, bench): "what:
 * done/total, N s", rewritten in place with \r, only when stderr is a
 * terminal; a pipe or a file gets nothing extra.
 */
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "timing.h"
#include "tools.h"

static double now_s(void)
{
    return vg_now_us() * 1e-6;
}

void tool_progress_start(tool_progress *p, const char *what)
{
    p->on = isatty(STDERR_FILENO);
    p->what = what;
    p->start = now_s();
    p->last = 0.0;
}

void tool_progress_show(tool_progress *p, int force, const char *fmt, ...)
{
    if (!p->on)
        return;
    const double t = now_s();
    /* A terminal redrawn more than ten times a second only costs time. */
    if (!force && t - p->last < 0.1)
        return;
    p->last = t;
    char text[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\r\033[K%s: %s, %.1f s", p->what, text, t - p->start);
    fflush(stderr);
}

void tool_progress_end(tool_progress *p)
{
    if (!p->on)
        return;
    fprintf(stderr, "\r\033[K");
    fflush(stderr);
}
