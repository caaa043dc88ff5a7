# Sourced by the bisect suites (test_bisect.sh, test_auto_bisect.sh):
# kernel_repo DIR makes DIR a fresh git repository holding a tiny shell
# "kernel" project -- kernel.conf (DELAY_US: its time per call), build.sh
# BUILD (does not build when DELAY_US is not a number) and bench.sh BUILD
# JSON (the bench JSON of the CPU grouped shape, 15 samples per row around
# DELAY_US, and a loop row at 50 us; named g4n256k512/..., or ROW_PREFIX/...
# where kernel.conf sets it: ROW_PREFIX=wo_a is a bench from before issue
# 30) -- and cds into it.  commit MESSAGE commits all and prints the
# commit's sha.
kernel_repo() {
    mkdir -p "$1" && cd "$1" || return 1
    export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com
    git init -q -b main . 2>/dev/null || git init -q .
    git config commit.gpgsign false
    cat > build.sh <<'EOF2'
#!/bin/sh
# build.sh BUILD: "compiles" the kernel; a config without a valid DELAY_US does not build.
grep -q '^DELAY_US=[0-9][0-9]*$' kernel.conf || { echo "build.sh: syntax error in kernel.conf" >&2; exit 2; }
mkdir -p "$1" && cp kernel.conf "$1/kernel.conf"
EOF2
    cat > bench.sh <<'EOF2'
#!/bin/sh
# bench.sh BUILD JSON: 15 samples per row around the built kernel's DELAY_US.
. "$1/kernel.conf"
awk -v d="$DELAY_US" -v p="${ROW_PREFIX:-g4n256k512}" 'function row(name, path, c,   j, s) {
    s = ""; for (j = 0; j < 15; j++) s = s (j ? "," : "") sprintf("%.4f", c * (1 + ((j * 7) % 15) / 1000.0));
    return sprintf("{\"name\":\"%s\",\"kind\":\"kernel\",\"path\":\"%s\",\"family\":\"fp8\",\"m\":24,\"n\":256,\"k\":512,\"groups\":4,\"tokens\":6,\"plan\":\"p\",\"decision\":\"reuse\",\"samples_us\":[%s],\"median_us\":%.4f,\"min_us\":%.4f,\"max_us\":%.4f,\"bytes\":524288,\"flops\":6291456,\"bandwidth_fraction\":null,\"max_rel_rms\":null}", name, path, s, c * 1.007, c, c * 1.014) }
  BEGIN { printf "{\"tool\":\"bench\",\"backend\":\"cpu\",\"gpu\":null,\"driver\":null,\"cuda_version\":null,\"arch_list\":null,\"policy_hash\":null,\"config\":null,\"copy_bandwidth_gbs\":null,\"rows\":[%s,%s]}\n", row(p "/grouped/fp8/t6/tune=on", "grouped", d), row(p "/loop/fp8/t6/tune=on", "loop", 50) }' > "$2"
EOF2
}

commit() { git add -A && git commit -q -m "$1" && git rev-parse HEAD; }
