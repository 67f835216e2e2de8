# Editor extensions, Composer and the workflow scan (docs/performance.md)
# in make bench-scale: sourced by bench-scale.sh inside its loop, after
# the other ecosystems' rows (its variables: WORK, D, BIN, S, T, backend,
# daemon, BENCH_TOKEN; wrk_run, res). Writes its rows of the report to
# $WORK/extensions-$backend.md.
#
# 1. Open VSX's extensionquery (the VS Code gallery's POST search of one
#    extension, 200 versions), cached, against the same bytes POSTed to
#    the trivial handler; Composer's p2 document of 500 versions, cached,
#    against the same bytes from it.
# 2. A 50 MB .vsix through the firewall against the same bytes from the
#    trivial handler, the daemon's resident memory sampled as it streams.
# 3. threatd scan --server of a repository of 200 workflow files (10
#    uses: each), the wall time of three runs.
echo "== $backend: editor extensions, Composer, workflow scan"
EXTQ=/functions/v1/firewall/openvsx/vscode/gallery/extensionquery
COMPOSERDOC=/functions/v1/firewall/composer/p2/vendor/fw-bench.json
VSIX=/functions/v1/firewall/openvsx/vscode/asset/fwbench/fw-bench/1.0.0/Microsoft.VisualStudio.Services.VSIXPackage
# VS Code's query of an installed extension's versions (flags 0x93).
printf '%s' '{"filters":[{"criteria":[{"filterType":8,"value":"Microsoft.VisualStudio.Code"},{"filterType":7,"value":"fwbench.fw-bench"}],"pageNumber":1,"pageSize":50,"sortBy":0,"sortOrder":0}],"assetTypes":[],"flags":147}' > "$WORK/extquery.json"
cat > "$WORK/post.lua" <<'EOF'
local TOKEN, P = os.getenv("BENCH_TOKEN"), os.getenv("BENCH_PATH")
local f = io.open(os.getenv("BENCH_BODY"), "rb"); local BODY = f:read("*a"); f:close()
request = function() return wrk.format("POST", P, {["Authorization"] = "Bearer " .. TOKEN, ["Content-Type"] = "application/json", ["Accept"] = "application/json;api-version=3.0-preview.1"}, BODY) end
EOF
# Fill the firewall's cache, and keep its answers for the trivial handler.
curl -sk -X POST -H "Authorization: Bearer $BENCH_TOKEN" -H "Content-Type: application/json" --data-binary @"$WORK/extquery.json" "$S$EXTQ" -o "$D/fw/extquery.json"
curl -sk -H "Authorization: Bearer $BENCH_TOKEN" "$S$COMPOSERDOC" -o "$D/fw/composer.doc"
curl -sk -H "Authorization: Bearer $BENCH_TOKEN" "$S$VSIX" -o /dev/null
ext_bytes="$(wc -c < "$D/fw/extquery.json") B answer, $(grep -o '"version":"' "$D/fw/extquery.json" | wc -l) versions"
composer_bytes="$(wc -c < "$D/fw/composer.doc") B, $(grep -o '"version":"' "$D/fw/composer.doc" | wc -l) versions"
export BENCH_BODY=$WORK/extquery.json
for round in 1 2; do
  BENCH_PATH=/files/extquery.json wrk_run "$backend-extq-trivial$round" 32 "$T" "$WORK/post.lua"
  BENCH_PATH=$EXTQ wrk_run "$backend-extq$round" 32 "$S" "$WORK/post.lua"
  BENCH_PATH=/files/composer.doc wrk_run "$backend-composer-trivial$round" 32 "$T" "$WORK/get.lua"
  BENCH_PATH=$COMPOSERDOC wrk_run "$backend-composer$round" 32 "$S" "$WORK/get.lua"
done
vsix_before=$(awk '/^VmRSS/{print $2}' /proc/$daemon/status)
( peak=0; while [ ! -f "$D/vsix-rss.stop" ]; do r=$(awk '/^VmRSS/{print $2}' /proc/$daemon/status 2>/dev/null || echo 0); [ "${r:-0}" -gt "$peak" ] && peak=$r; sleep 0.2; done; echo "$peak" > "$D/vsix-rss" ) & vsixsampler=$!
BENCH_PATH=/files/vsix.blob wrk_run "$backend-vsix-trivial" 2 "$T" "$WORK/get.lua"
BENCH_PATH=$VSIX wrk_run "$backend-vsix" 2 "$S" "$WORK/get.lua"
touch "$D/vsix-rss.stop"; wait $vsixsampler; rm -f "$D/vsix-rss.stop"
vsix_rss="$((vsix_before / 1024)) MB before, $(( $(cat "$D/vsix-rss") / 1024 )) MB at most while streaming"
# 200 workflows, each 10 uses: of 40 actions (by tag, by commit, a
# reusable workflow, an image), as a large monorepo's .github holds.
rm -rf "$WORK/wf"; mkdir -p "$WORK/wf/.github/workflows"
python3 - "$WORK/wf/.github/workflows" <<'PY'
import sys
d = sys.argv[1]
for i in range(200):
    steps = []
    for j in range(8):
        k = (i * 10 + j) % 40
        ref = "v%d" % (k % 5 + 1) if k % 3 else "%040x" % (k + 1)
        steps.append("      - uses: bench-org-%d/action-%d@%s\n        with: {arg: '%d'}\n      - run: echo step %d" % (k % 10, k, ref, j, j))
    steps.append("      - uses: docker://alpine:3.%d" % (i % 20))
    open("%s/w%03d.yml" % (d, i), "w").write(
        "name: w%d\non: [push, pull_request]\njobs:\n  reuse:\n    uses: bench-org-0/workflows/.github/workflows/ci.yml@v1\n  build:\n    runs-on: ubuntu-latest\n    steps:\n%s\n" % (i, "\n".join(steps)))
PY
scan_times=""
for _ in 1 2 3; do
  s0=$(date +%s.%N)
  SSL_CERT_FILE="$D/data/tls/cert.pem" "$BIN" scan --server "$S/functions/v1" --token "$BENCH_TOKEN" --format json --fail-on none "$WORK/wf" > "$WORK/scan-wf.json"
  scan_times="$scan_times $(python3 -c "print('%.2f' % ($(date +%s.%N) - $s0))")"
done
{
  pct() { python3 -c "print('%.0f %%' % (100 * float('$1' or 0) / float('$2' or 1)))"; }
  for round in 1 2; do
    read -r qt _ _ _ < <(res "$backend-extq-trivial$round"); read -r q qp50 qp99 qbad < <(res "$backend-extq$round")
    echo "| trivial handler, the extensionquery answer POSTed (round $round) | 32 | $qt | | | | |"
    echo "| firewall, Open VSX extensionquery, cached ($ext_bytes; round $round) | 32 | $q | $qp50 | $qp99 | $qbad | $(pct "$q" "$qt") |"
    read -r ct _ _ _ < <(res "$backend-composer-trivial$round"); read -r c cp50 cp99 cbad < <(res "$backend-composer$round")
    echo "| trivial handler, the p2 document (round $round) | 32 | $ct | | | | |"
    echo "| firewall, Composer p2 document, cached ($composer_bytes; round $round) | 32 | $c | $cp50 | $cp99 | $cbad | $(pct "$c" "$ct") |"
  done
  read -r vt _ _ _ < <(res "$backend-vsix-trivial"); read -r v vp50 vp99 vbad < <(res "$backend-vsix")
  echo "| trivial handler, a 50 MB file | 2 | $vt | | | | |"
  echo "| firewall, a 50 MB .vsix ($vsix_rss) | 2 | $v | $vp50 | $vp99 | $vbad | $(pct "$v" "$vt") |"
  echo "| threatd scan --server of 200 workflow files (2,000 uses:, 40 actions; wall time of 3 runs) | | | | | | ${scan_times# } s |"
} > "$WORK/extensions-$backend.md"
cat "$WORK/extensions-$backend.md"
