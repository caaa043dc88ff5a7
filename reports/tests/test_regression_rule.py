"""The noise-aware regression rule: U test AND minimum effect size."""
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import stats  # noqa: E402


def noisy(rng, center, n, spread=0.02):
    return [center * (1.0 + rng.gauss(0.0, spread)) for _ in range(n)]


class RegressionRule(unittest.TestCase):
    def test_noise_only_is_not_flagged(self):
        # 50 pairs of runs of pure noise at 2 %: at alpha 0.05 with a 3 %
        # effect floor none may be flagged.
        rng = random.Random(7)
        for _ in range(50):
            res = stats.compare_samples(noisy(rng, 10.0, 30), noisy(rng, 10.0, 30))
            self.assertNotEqual(res["verdict"], "regressed", res)

    def test_ten_percent_shift_with_30_samples_is_flagged(self):
        rng = random.Random(11)
        res = stats.compare_samples(noisy(rng, 10.0, 30), noisy(rng, 11.0, 30))
        self.assertEqual(res["verdict"], "regressed")
        self.assertLess(res["p"], 0.001)
        self.assertAlmostEqual(res["effect"], 0.10, delta=0.02)

    def test_one_percent_shift_is_below_the_effect_size(self):
        # Tight samples make 1 % significant; the effect floor must still hold it back.
        rng = random.Random(3)
        base, new = noisy(rng, 10.0, 200, 0.001), noisy(rng, 10.1, 200, 0.001)
        res = stats.compare_samples(base, new)
        self.assertLess(res["p"], 0.05)            # significant...
        self.assertEqual(res["verdict"], "same")   # ...but too small to flag

    def test_big_shift_without_significance_is_not_flagged(self):
        # Medians 10 % apart but the samples overlap completely (huge noise).
        base = [1, 20, 5, 30, 9, 2, 25, 11, 14, 3]
        new = [x * 1.1 for x in [20, 1, 30, 5, 2, 9, 11, 25, 3, 14]]
        res = stats.compare_samples(base, new)
        self.assertGreater(res["p"], 0.05)
        self.assertEqual(res["verdict"], "same")

    def test_too_few_samples_never_flags(self):
        res = stats.compare_samples([10.0] * 8, [20.0] * 30)
        self.assertEqual(res["verdict"], "too few samples")
        self.assertIsNone(res["p"])
        res = stats.compare_samples([10.0 + i * 0.01 for i in range(30)], [20.0, 20.1, 20.2])
        self.assertEqual(res["verdict"], "too few samples")

    def test_nine_per_side_is_enough(self):
        base = [10.0 + 0.01 * i for i in range(9)]
        new = [11.0 + 0.01 * i for i in range(9)]
        res = stats.compare_samples(base, new)
        self.assertEqual(res["method"], "exact")
        self.assertEqual(res["verdict"], "regressed")

    def test_faster_is_improved_not_regressed(self):
        rng = random.Random(5)
        res = stats.compare_samples(noisy(rng, 10.0, 30), noisy(rng, 8.0, 30))
        self.assertEqual(res["verdict"], "improved")

    def test_min_effect_and_alpha_are_honoured(self):
        rng = random.Random(9)
        base, new = noisy(rng, 10.0, 30, 0.005), noisy(rng, 10.5, 30, 0.005)
        self.assertEqual(stats.compare_samples(base, new)["verdict"], "regressed")
        self.assertEqual(stats.compare_samples(base, new, min_effect=0.08)["verdict"], "same")
        self.assertEqual(stats.compare_samples(base, new, alpha=1e-30)["verdict"], "same")


if __name__ == "__main__":
    unittest.main()
