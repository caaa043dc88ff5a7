"""Statistics for voltgate's regression rule (Python 3 standard library only).

mann_whitney_u(x, y) is the two-sided Mann-Whitney U test (Wilcoxon rank-sum):

* exact    -- when neither sample has a tie across the pooled data and the
              pooled size is at most EXACT_MAX_N: the p-value comes from the
              exact null distribution of U, counted by dynamic programming.
* normal   -- otherwise: the normal approximation with the tie correction of
              the variance and a 0.5 continuity correction.

Both give the same answers as scipy.stats.mannwhitneyu(..., method="exact")
and method="asymptotic" (use_continuity=True) respectively.

The test means little with few samples (TRAPS.md: below about 9 per side),
so compare_samples() refuses to flag anything below MIN_SAMPLES per side and
says "too few samples" instead.
"""
import math

EXACT_MAX_N = 40     # pooled size up to which the exact distribution is used
MIN_SAMPLES = 9      # per side; below this the rule never flags


def median(values):
    s = sorted(values)
    n = len(s)
    if n == 0:
        raise ValueError("median of no values")
    mid = n // 2
    return s[mid] if n % 2 else (s[mid - 1] + s[mid]) / 2.0


def _ranks(pooled):
    """Mid-ranks (1-based) of the pooled values, and the sizes of tie groups."""
    order = sorted(range(len(pooled)), key=lambda i: pooled[i])
    ranks = [0.0] * len(pooled)
    ties = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and pooled[order[j + 1]] == pooled[order[i]]:
            j += 1
        rank = (i + j) / 2.0 + 1.0
        for t in range(i, j + 1):
            ranks[order[t]] = rank
        if j > i:
            ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


def _exact_cdf_counts(n1, n2):
    """counts[u] = number of arrangements of n1 x's and n2 y's giving U_x = u.

    Recurrence on the largest pooled element: it is an x (adds n2 to U_x:
    it beats every y) or a y (adds nothing)."""
    # f[a][b] is the list of counts for a x's and b y's.
    prev_row = [[1] for _ in range(n2 + 1)]            # a = 0: U is 0
    for a in range(1, n1 + 1):
        row = [[1]]                                     # b = 0: U is 0
        for b in range(1, n2 + 1):
            with_x = prev_row[b]                       # largest is x: U += b
            with_y = row[b - 1]                        # largest is y
            size = a * b + 1
            counts = [0] * size
            for u, c in enumerate(with_y):
                counts[u] += c
            for u, c in enumerate(with_x):
                counts[u + b] += c
            row.append(counts)
        prev_row = row
    return prev_row[n2]


def _normal_sf(z):
    """P(Z > z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def mann_whitney_u(x, y, method="auto"):
    """Two-sided Mann-Whitney U test of samples x and y.

    Returns (u_x, p, method_used): u_x is the U statistic of x (the number
    of (x_i, y_j) pairs with x_i > y_j, ties counting one half), p the
    two-sided p-value, method_used "exact" or "normal"."""
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        raise ValueError("Mann-Whitney U needs at least one value on each side")
    pooled = list(x) + list(y)
    ranks, ties = _ranks(pooled)
    r1 = sum(ranks[:n1])
    u_x = r1 - n1 * (n1 + 1) / 2.0
    if method == "auto":
        method = "exact" if not ties and n1 + n2 <= EXACT_MAX_N else "normal"
    if method == "exact":
        if ties:
            raise ValueError("the exact test needs samples without ties")
        counts = _exact_cdf_counts(n1, n2)
        total = float(sum(counts))
        u_big = max(u_x, n1 * n2 - u_x)            # the distribution is symmetric
        tail = sum(counts[int(round(u_big)):]) / total
        return u_x, min(1.0, 2.0 * tail), "exact"
    if method != "normal":
        raise ValueError("method must be auto, exact or normal")
    n = n1 + n2
    mu = n1 * n2 / 2.0
    tie_term = sum(t ** 3 - t for t in ties)
    var = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1))) if n > 1 else 0.0
    if var <= 0.0:                                  # every value equal: no evidence
        return u_x, 1.0, "normal"
    u_big = max(u_x, n1 * n2 - u_x)
    z = (u_big - mu - 0.5) / math.sqrt(var)
    return u_x, min(1.0, max(0.0, 2.0 * _normal_sf(z))), "normal"


def compare_samples(base, new, min_effect=0.03, alpha=0.05, min_samples=MIN_SAMPLES):
    """The noise-aware regression rule for one benchmark row.

    base and new are the per-sample times (lower is better).  Returns a dict:
      verdict  "regressed" (slower by both tests), "improved" (faster by
               both), "same" (either test failed), "too few samples"
      effect   median(new) / median(base) - 1 (e.g. 0.10 = 10 % slower)
      p, u, method, n_base, n_new, median_base, median_new
    """
    out = {"n_base": len(base), "n_new": len(new), "p": None, "u": None, "method": None,
           "median_base": median(base) if base else None,
           "median_new": median(new) if new else None, "effect": None}
    if out["median_base"] and out["median_new"] is not None:
        out["effect"] = out["median_new"] / out["median_base"] - 1.0
    if len(base) < min_samples or len(new) < min_samples:
        out["verdict"] = "too few samples"
        return out
    u, p, method = mann_whitney_u(new, base)
    out.update(p=p, u=u, method=method)
    effect = out["effect"]
    if effect is None:
        out["verdict"] = "same"
    elif p < alpha and effect >= min_effect:
        out["verdict"] = "regressed"
    elif p < alpha and effect <= -min_effect:
        out["verdict"] = "improved"
    else:
        out["verdict"] = "same"
    return out
