/*
 * The job page's chart, as inline SVG (no script, no library): shards done (left axis,
 * up to the job's total) and results per second (right axis) against time, from the
 * job's history ring (history.c). Results/s is the slope between neighbouring points.
 */
#include "http_impl.h"

#include <math.h>

#define CW 720                     /* the chart's size in CSS pixels */
#define CH 240
#define ML 70                      /* margins: room for the axis labels */
#define MR 70
#define MT 16
#define MB 34

static double px(double t, double t0, double t1)
{
    return ML + (t1 > t0 ? (t - t0) / (t1 - t0) : 1.0) * (CW - ML - MR);
}

static double py(double v, double vmax)
{
    return CH - MB - (vmax > 0 ? v / vmax : 0) * (CH - MT - MB);
}

static void axes(FILE *f, const hist_sample_t *s, size_t n, double total, double rmax)
{
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#99a\"/>",
            ML, CH - MB, CW - MR, CH - MB);
    for (int k = 0; k <= 2; k++) {
        double y = py(k / 2.0, 1.0);
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e3e5ea\"/>",
                ML, y, CW - MR, y);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.0f</text>",
                ML - 6, y + 4, total * k / 2);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\">%.3g</text>", CW - MR + 6, y + 4, rmax * k / 2);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\">-", ML, CH - 10);
    html_duration(f, s[n - 1].t - s[0].t);
    fprintf(f, "</text><text x=\"%d\" y=\"%d\" text-anchor=\"end\">now</text>", CW - MR, CH - 10);
    fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#1f5fbf\">shards done</text>", 4, MT - 4);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" fill=\"#c15800\">results/s</text>",
            CW - 4, MT - 4);
}

static double max_rate(const hist_sample_t *s, size_t n)
{
    double m = 0;
    for (size_t i = 1; i < n; i++) {
        double dt = s[i].t - s[i - 1].t, r = dt > 0 ? (double)(s[i].done - s[i - 1].done) / dt : 0;
        if (s[i].done >= s[i - 1].done && r > m)
            m = r;
    }
    return m;
}

void chart_progress(FILE *f, const hist_sample_t *s, size_t n, uint64_t total)
{
    fprintf(f, "<svg id=\"progress-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"shards done and results per second\">",
            CW, CH, CW, CH);
    if (n < 2) {
        fprintf(f, "<text x=\"%d\" y=\"%d\">Collecting samples: one a second while the job runs under this "
                "broker.</text></svg>\n", ML, CH / 2);
        return;
    }
    double t0 = s[0].t, t1 = s[n - 1].t, rmax = max_rate(s, n);
    double vmax = total ? (double)total : (double)s[n - 1].done;
    axes(f, s, n, vmax, rmax);
    fputs("<polyline id=\"chart-done\" fill=\"none\" stroke=\"#1f5fbf\" stroke-width=\"2\" points=\"", f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%.1f,%.1f ", px(s[i].t, t0, t1), py((double)s[i].done, vmax));
    fputs("\"/><polyline id=\"chart-rate\" fill=\"none\" stroke=\"#c15800\" stroke-width=\"1.5\" "
          "points=\"", f);
    for (size_t i = 1; i < n; i++) {
        double dt = s[i].t - s[i - 1].t;
        double r = dt > 0 && s[i].done >= s[i - 1].done ? (double)(s[i].done - s[i - 1].done) / dt : 0;
        fprintf(f, "%.1f,%.1f ", px(s[i].t, t0, t1), py(r, rmax));
    }
    fputs("\"/></svg>\n", f);
}
