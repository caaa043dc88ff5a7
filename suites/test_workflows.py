"""The CI definitions (.github/workflows/ci.yml, ci/gitlab-ci.yml): every
command they run exists -- a script of this repository is there and
executable, a make target is a rule of the Makefile -- and the files pass
yamllint (.yamllint; skipped, with the reason, without yamllint)."""
import os
import re
import shlex
import shutil
import subprocess
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
WORKFLOWS = [".github/workflows/ci.yml", "ci/gitlab-ci.yml"]
# Commands from the runner's image, not from this repository.
SYSTEM = {"apt-get", "git", "mkdir", "cp", "tar", "echo", "test", "cd"}


def commands(path):
    """Each shell command a CI file runs: GitHub's `run:` values and GitLab's
    script lists (before_script, script), one string each."""
    out, in_list = [], False
    with open(os.path.join(ROOT, path)) as f:
        for line in f:
            m = re.match(r"^\s*(?:-\s+)?run:\s*(.+)$", line)
            if m:
                out.append(m.group(1).strip())
                continue
            if re.match(r"^\s*(before_script|script|after_script):\s*$", line):
                in_list = True
                continue
            item = re.match(r"^\s*-\s+(.+)$", line)
            if in_list and item:
                out.append(item.group(1).strip())
            elif line.strip() and not line.startswith(" " * 6):
                in_list = False
    return out


def make_targets():
    targets = set()
    for mk in ["Makefile"] + [os.path.join("suites", f) for f in os.listdir(os.path.join(ROOT, "suites"))
                              if f.endswith(".mk")] + ["suites/fuzz/fuzz.mk"]:
        p = os.path.join(ROOT, mk)
        if os.path.exists(p):
            with open(p) as f:
                for line in f:
                    m = re.match(r"^([A-Za-z0-9_.\- ]+?)\s*:(?!=)", line)
                    if m and "$" not in m.group(1):
                        targets.update(m.group(1).split())
    return targets


class Workflows(unittest.TestCase):
    def test_every_command_exists(self):
        targets = make_targets()
        seen = 0
        for wf in WORKFLOWS:
            self.assertTrue(os.path.exists(os.path.join(ROOT, wf)), f"no {wf}")
            cmds = commands(wf)
            self.assertTrue(cmds, f"{wf}: no commands found")
            for cmd in cmds:
                for part in re.split(r"&&|\|\||;|\|", cmd):
                    words = [w for w in shlex.split(part) if "=" not in w or w.startswith("-")]
                    if not words:
                        continue
                    prog = words[0]
                    seen += 1
                    if prog == "make":
                        for t in (w for w in words[1:] if not w.startswith("-")):
                            self.assertIn(t, targets, f"{wf}: `{cmd}`: no make target {t}")
                    elif "/" in prog:
                        p = os.path.join(ROOT, prog)
                        self.assertTrue(os.path.isfile(p) and os.access(p, os.X_OK),
                                        f"{wf}: `{cmd}`: {prog} is not an executable of this repository")
                    else:
                        self.assertIn(prog, SYSTEM, f"{wf}: `{cmd}`: unknown command {prog}")
        self.assertGreaterEqual(seen, 8)

    def test_the_checker_sees_a_missing_command(self):
        self.assertNotIn("no-such-target", make_targets())
        self.assertIn("check", make_targets())
        self.assertIn("regress", make_targets())

    @unittest.skipUnless(shutil.which("yamllint"), "no yamllint (apt-get install yamllint)")
    def test_yamllint(self):
        proc = subprocess.run(["yamllint", "-s", "-c", os.path.join(ROOT, ".yamllint")]
                              + [os.path.join(ROOT, wf) for wf in WORKFLOWS],
                              capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)


if __name__ == "__main__":
    unittest.main()
