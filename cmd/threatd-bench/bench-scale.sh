#!/usr/bin/env bash
# make bench-scale: threatd at a million verified reports (docs/performance.md).
#
#   BENCH_N=1000000 BENCH_BACKENDS="sqlite postgres" make bench-scale
#   BENCH_REUSE=1 make bench-scale   # keep the SQLite database of the last run:
#                                    # start-up and load only
#   BENCH_ONLY=firewall              # only the firewall's rows (its policy too)
#   BENCH_ONLY=extensions            # only the editor extensions', Composer's and
#                                    # the workflow scan's rows (extensions.sh)
#
# For each backend: import the synthetic archive (rates of the first and last
# 100k, overall), re-import it unchanged, start the daemon (seconds until
# check-malicious answers), then drive load with wrk over HTTPS against
# threatd and against a trivial echo v5 handler on the same certificate,
# alternating, time `export osv` with the daemon stopped, and print one
# table. RSS is each process's peak (VmHWM).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
N=${BENCH_N:-1000000}
# BENCH_ONLY=extensions is the firewall's run cut to extensions.sh's rows.
if [ "${BENCH_ONLY:-}" = extensions ]; then BENCH_ONLY=firewall; BENCH_EXT_ONLY=1; fi
BACKENDS=${BENCH_BACKENDS:-sqlite postgres}
DUR=${BENCH_DURATION:-10s}
WORK=${BENCH_DIR:-/tmp/threatd-bench}
mkdir -p "$WORK"
# A step that fails ends the run: its daemons, upstream and trivial
# handler with it (left running, they held the next run's ports).
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT

if ! command -v wrk >/dev/null; then
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
  else echo "bench-scale needs wrk: sudo apt-get install wrk" >&2; exit 1; fi
fi
make build >/dev/null
go build -o "$WORK/threatd-bench" ./cmd/threatd-bench
BIN=$ROOT/bin/threatd
# v2: one record in ten names an exfiltration URL (the indicator search).
ARCHIVE=$WORK/bench-$N-v2.zip
[ -f "$ARCHIVE" ] || { echo "generating $N records into $ARCHIVE"; "$WORK/threatd-bench" gen -n "$N" -o "$ARCHIVE"; }

# peak RSS (kB) of every process whose executable is under bin/, sampled
# until the file $1.stop exists; results in $1 as "name kB".
sample_rss() { "$WORK/threatd-bench" rss -dir "$ROOT/bin" -out "$1"; }
rss_of() { awk -v n="$2" '$1==n && NF==3{printf "%.0f MB", $2/1024; exit}' "$1"; }
# the anonymous part (without mapped files such as the SQLite database)
anon_of() { awk -v n="$2" '$1==n && NF==3{printf "%.0f MB", $3/1024; exit}' "$1"; }
# the anonymous part of the daemon and every plugin, added up (each its peak)
anon_total() { awk 'NF==3{s+=$3} END{printf "%.0f MB", s/1024}' "$1"; }

# wrk_run NAME CONNS URL SCRIPT: requests/s, p50 and p99 (ms) into $WORK/wrk-NAME.
wrk_run() {
  local name=$1 conns=$2 url=$3 script=$4
  wrk -t1 -c"$conns" -d"$DUR" --latency -s "$script" "$url" > "$WORK/wrk-$name.txt" 2>&1 || true
  local rps p50 p99
  rps=$(awk '/^Requests\/sec/{print $2}' "$WORK/wrk-$name.txt")
  p50=$(awk '$1=="50%"{print $2}' "$WORK/wrk-$name.txt")
  p99=$(awk '$1=="99%"{print $2}' "$WORK/wrk-$name.txt")
  non2xx=$(awk '/Non-2xx/{print $5}' "$WORK/wrk-$name.txt")
  echo "$rps $p50 $p99 ${non2xx:-0}" > "$WORK/res-$name"
}
res() { cat "$WORK/res-$1"; }

cat > "$WORK/check.lua" <<'EOF'
-- 90 % misses / 10 % hits (BENCH_HIT=10) drawn uniformly from all N reports.
local N, HIT, TOKEN = tonumber(os.getenv("BENCH_N")), tonumber(os.getenv("BENCH_HIT")), os.getenv("BENCH_TOKEN")
math.randomseed(os.time())
request = function()
  local path
  if math.random(100) <= HIT then
    local i = math.random(0, N - 1)
    if i % 2 == 0 then path = string.format("/functions/v1/check-malicious?report_type=package&resource_identifier=bench-npm-%07d&ecosystem=npm", i)
    else path = string.format("/functions/v1/check-malicious?report_type=package&resource_identifier=bench-pypi-%07d&ecosystem=pypi", i) end
  else
    path = string.format("/functions/v1/check-malicious?report_type=package&resource_identifier=clean-pkg-%d&ecosystem=npm", math.random(1, 1000000000))
  end
  return wrk.format("GET", path, {["Authorization"] = "Bearer " .. TOKEN})
end
EOF
cat > "$WORK/trivial.lua" <<'EOF'
local TOKEN = os.getenv("BENCH_TOKEN")
request = function() return wrk.format("GET", "/trivial", {["Authorization"] = "Bearer " .. TOKEN}) end
EOF
cat > "$WORK/latest.lua" <<'EOF'
local TOKEN, Q = os.getenv("BENCH_TOKEN"), os.getenv("BENCH_QUERY") or ""
request = function() return wrk.format("GET", "/functions/v1/query-latest" .. Q, {["Authorization"] = "Bearer " .. TOKEN}) end
EOF
cat > "$WORK/batch.lua" <<'EOF'
-- POST /check-malicious with 1,000 package queries, half of them hits.
local N, TOKEN = tonumber(os.getenv("BENCH_N")), os.getenv("BENCH_TOKEN")
local q = {}
for k = 1, 1000 do
  local i = math.random(0, N - 1)
  if k % 2 == 0 then q[k] = string.format('{"report_type":"package","resource_identifier":"bench-npm-%07d","ecosystem":"npm"}', i - i % 2)
  else q[k] = string.format('{"report_type":"package","resource_identifier":"clean-%d","ecosystem":"pypi"}', i) end
end
local body = '{"queries":[' .. table.concat(q, ",") .. ']}'
request = function() return wrk.format("POST", "/functions/v1/check-malicious", {["Authorization"] = "Bearer " .. TOKEN, ["Content-Type"] = "application/json"}, body) end
EOF
cat > "$WORK/taxii.lua" <<'EOF'
-- TAXII: a page of 100 objects of the "threats" collection, from a random
-- point of it (added_after drawn between BENCH_T0 and BENCH_T1, unix µs),
-- or its first page (BENCH_T0 empty).
local TOKEN, T0, T1 = os.getenv("BENCH_TOKEN"), tonumber(os.getenv("BENCH_T0") or ""), tonumber(os.getenv("BENCH_T1") or "")
math.randomseed(os.time())
request = function()
  local q = "limit=100"
  if T0 then
    local t = math.random(T0, T1)
    q = q .. "&added_after=" .. os.date("!%Y-%m-%dT%H:%M:%S", math.floor(t / 1000000)) .. string.format(".%06dZ", t % 1000000)
  end
  return wrk.format("GET", "/taxii2/api/collections/threats/objects/?" .. q,
    {["Authorization"] = "Bearer " .. TOKEN, ["Accept"] = "application/taxii+json;version=2.1"})
end
EOF
cat > "$WORK/osvquery.lua" <<'EOF'
-- OSV.dev's query API: half hits (a random imported npm package), half misses.
local N, TOKEN = tonumber(os.getenv("BENCH_N")), os.getenv("BENCH_TOKEN")
math.randomseed(os.time())
request = function()
  local name
  if math.random(2) == 1 then local i = math.random(0, N - 1); name = string.format("bench-npm-%07d", i - i % 2)
  else name = string.format("clean-%d", math.random(1, 1000000000)) end
  return wrk.format("POST", "/functions/v1/osv/v1/query", {["Authorization"] = "Bearer " .. TOKEN, ["Content-Type"] = "application/json"},
    string.format('{"package":{"name":"%s","ecosystem":"npm"},"version":"1.0.0"}', name))
end
EOF
cat > "$WORK/scan.lua" <<'EOF'
-- POST /scan with a 5,000-package package-lock.json (1 % of them reported).
local TOKEN = os.getenv("BENCH_TOKEN")
local f = assert(io.open(os.getenv("BENCH_FILE"), "rb")); local body = f:read("*a"); f:close()
request = function() return wrk.format("POST", "/functions/v1/scan?file=package-lock.json", {["Authorization"] = "Bearer " .. TOKEN, ["Content-Type"] = "application/json"}, body) end
EOF
python3 - "$WORK/scan-5000.json" "$N" <<'EOF'
import json, random, sys
random.seed(1)
n = int(sys.argv[2])
pk = {"": {"name": "bench-app", "version": "1.0.0"}}
for k in range(5000):
    name = "bench-npm-%07d" % (random.randrange(0, n, 2)) if k % 100 == 0 else "clean-lib-%d" % k
    pk["node_modules/" + name] = {"version": "1.0.%d" % (k % 50), "resolved": "https://registry.npmjs.org/%s/-/%s-1.0.0.tgz" % (name, name),
        "integrity": "sha512-" + "A" * 86 + "=="}
json.dump({"name": "bench-app", "version": "1.0.0", "lockfileVersion": 3, "requires": True, "packages": pk}, open(sys.argv[1], "w"), indent=2)
EOF
# The firewall: a 200-version npm document and a 16 MiB tarball, both in
# its upstream cache, against the same bytes from the trivial handler.
cat > "$WORK/get.lua" <<'EOF'
local TOKEN, P = os.getenv("BENCH_TOKEN"), os.getenv("BENCH_PATH")
request = function() return wrk.format("GET", P, {["Authorization"] = "Bearer " .. TOKEN, ["Accept"] = "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*"}) end
EOF
# The firewall's decision list (decisions.lua): a random path of BENCH_PATHS.
cat > "$WORK/decisions.lua" <<'EOF'
local TOKEN, paths = os.getenv("BENCH_ADMIN_TOKEN"), {}
for l in io.lines(os.getenv("BENCH_PATHS")) do paths[#paths + 1] = l end
math.randomseed(os.time())
request = function() return wrk.format("GET", paths[math.random(1, #paths)], {["Authorization"] = "Bearer " .. TOKEN}) end
EOF
cat > "$WORK/submit.lua" <<'EOF'
-- Every request a new package (unique per thread and run).
local TOKEN, n = os.getenv("BENCH_TOKEN"), 0
local run = tostring(os.time()) .. tostring(math.random(1, 1000000))
request = function()
  n = n + 1
  local body = string.format('{"report_type":"package","resource_identifier":"submitted-%s-%d","registry":"npm","threat_description":"Steals tokens at install time","severity_level":"high"}', run, n)
  return wrk.format("POST", "/functions/v1/submit-threat-report", {["Authorization"] = "Bearer " .. TOKEN, ["Content-Type"] = "application/json"}, body)
end
EOF

# The web site's pages, anonymous (web.lua): BENCH_WEB picks the page.
#   browse: /threats; browse-deep: /threats from a random keyset position;
#   browse-pypi: /threats?ecosystem=pypi; browse-severity: ?severity=high;
#   search-purl: a random report by purl; search-prefix: a name prefix;
#   search-indicator: a random exfiltration domain; search-miss: a clean
#   name; threat: a random report's page (ids from BENCH_IDS).
cat > "$WORK/web.lua" <<'EOF'
local N, KIND = tonumber(os.getenv("BENCH_N")), os.getenv("BENCH_WEB")
local T0, T1 = tonumber(os.getenv("BENCH_VT0") or "0"), tonumber(os.getenv("BENCH_VT1") or "0")
local ids = {}
if KIND == "threat" then for l in io.lines(os.getenv("BENCH_IDS")) do ids[#ids + 1] = l end end
math.randomseed(os.time())
request = function()
  local i, p = math.random(0, N - 1)
  if KIND == "home" then p = "/"
  elseif KIND == "browse" then p = "/threats"
  elseif KIND == "browse-deep" then p = string.format("/threats?after=%.0f.ffffffff-ffff-7fff-bfff-ffffffffffff", math.random(T0, T1))
  elseif KIND == "browse-pypi" then p = "/threats?ecosystem=pypi"
  elseif KIND == "browse-severity" then p = "/threats?severity=high"
  elseif KIND == "search-purl" then p = string.format("/?q=pkg%%3Anpm%%2Fbench-npm-%07d", i - i % 2)
  elseif KIND == "search-prefix" then p = string.format("/?q=bench-pypi-%05d", math.random(0, 9999))
  elseif KIND == "search-indicator" then p = string.format("/?q=c2-%07d.bench-exfil.example", i - i % 10)
  elseif KIND == "search-miss" then p = string.format("/?q=clean-lib-%d", i)
  elseif KIND == "leaderboard" then p = "/leaderboard?period=all"
  elseif KIND == "leaderboard-30d" then p = "/leaderboard?period=30d"
  elseif KIND == "profile" then p = string.format("/users/bench-user-%03d", math.random(1, tonumber(os.getenv("BENCH_USERS") or "1")))
  elseif KIND == "campaign" then p = "/campaigns/" .. os.getenv("BENCH_CAMPAIGN")
  else p = "/threats/" .. ids[math.random(#ids)] end
  return wrk.format("GET", p, {["Accept"] = "text/html"})
end
EOF

PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
pg_start() {
  PGTMP=$(mktemp -d /tmp/threatd-bench-pg.XXXXXX); chown postgres:postgres "$PGTMP"
  runuser -u postgres -- "$PGBIN/initdb" -D "$PGTMP/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync >/dev/null
  runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGTMP/data" -l "$PGTMP/server.log" -w -t 30 \
    -o "-c listen_addresses=127.0.0.1 -p 55439 -k $PGTMP -c shared_buffers=512MB -c synchronous_commit=off" start >/dev/null
  runuser -u postgres -- psql -h "$PGTMP" -p 55439 -U postgres -qc "CREATE DATABASE threatd_bench"
  DSN="postgres://postgres@127.0.0.1:55439/threatd_bench?sslmode=disable"
}
pg_stop() { runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGTMP/data" -m fast -w stop >/dev/null; rm -rf "$PGTMP"; }

for backend in $BACKENDS; do
  D=$WORK/$backend
  reuse=""
  if [ -n "${BENCH_REUSE:-}" ] && [ "$backend" = sqlite ] && [ -f "$D/token" ] && [ -f "$D/rates" ]; then reuse=1
  else rm -rf "$D"; mkdir -p "$D"; fi
  CFG=$D/threatd.yaml
  storage="storage: {plugin: sqlite}"
  if [ "$backend" = postgres ]; then pg_start; storage="storage: {plugin: postgres, dsn: \"$DSN\"}"; fi
  cat > "$CFG" <<EOF
data_dir: $D/data
plugins: {dir: $ROOT/bin/plugins}
$storage
server: {listen: "127.0.0.1:18443"}
metrics: {listen: "127.0.0.1:19464"}   # on, as in production, on a port of its own
exporters: [stix, osv]
log: {access_sample: 100}
firewall:
  npm: {upstream: "http://127.0.0.1:18445"}
  maven: {upstream: "http://127.0.0.1:18445/maven2"}
  cargo: {upstream: "http://127.0.0.1:18445/cargo"}
  rubygems: {upstream: "http://127.0.0.1:18445/rubygems"}
  nuget: {upstream: "http://127.0.0.1:18445/v3/index.json"}
  openvsx: {upstream: "http://127.0.0.1:18445/openvsx"}
  composer: {upstream: "http://127.0.0.1:18445/composer", file_hosts: []}
  oci: {listen: "127.0.0.1:18446", upstream: "http://127.0.0.1:18445", file_hosts: []}
  per_ip_per_minute: 0
  per_token_per_minute: 0
limits:
  per_ip_per_minute: 0
  per_token_per_minute: {free: 0, paid: 0}
  new_user_max_unverified: 0
  submissions_per_hour: 0
  sightings_per_hour: {free: 0, paid: 0}
  batch_max: 1000
EOF
  if [ -z "$reuse" ]; then
  "$BIN" migrate --config "$CFG" >/dev/null   # only serve, migrate and bootstrap create a database
  echo "== $backend: import $N records"
  rm -f "$D/rss-import" "$D/rss-import.stop"; sample_rss "$D/rss-import" & sampler=$!
  start=$(date +%s.%N)
  "$BIN" import osv "$ARCHIVE" --config "$CFG" 2>&1 >"$D/import.out" | while IFS= read -r l; do echo "$(date +%s.%N) $l"; done > "$D/import.log"
  end=$(date +%s.%N); touch "$D/rss-import.stop"; wait $sampler
  rates=$(python3 - "$D/import.log" "$start" "$end" "$N" <<'EOF'
import re, sys
pts = [(float(m.group(1)), int(m.group(2))) for m in (re.match(r'(\S+) progress: \d+/\d+ files, (\d+) records', l) for l in open(sys.argv[1])) if m]
start, end, n = float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
at = lambda k: next(t for t, c in pts if c >= k)
k = min(100000, n // 10)
# Progress lines come about once a second: a small import may have its first
# and last k records between the same two lines ("-": too few to time).
rate = lambda a, b: "%.0f" % (k / (b - a)) if b > a else "-"
print("%s %s %.0f" % (rate(start, at(k)), rate(at(n - k), at(n)), n / (end - start)))
EOF
)
  echo "== $backend: re-import"
  start=$(date +%s.%N)
  rm -f "$D/rss-reimport" "$D/rss-reimport.stop"; sample_rss "$D/rss-reimport" & sampler=$!
  "$BIN" import osv "$ARCHIVE" --config "$CFG" >"$D/reimport.out" 2>/dev/null
  end=$(date +%s.%N); touch "$D/rss-reimport.stop"; wait $sampler
  reimport=$(python3 -c "print('%.0f' % ($N / ($end - $start)))")

  "$BIN" user add --config "$CFG" --email bench@example.com --tier paid >/dev/null
  # The plans and times of the web pages' statements at this size.
  explain_dsn="sqlite:$D/data/threatd.db"; [ "$backend" = postgres ] && explain_dsn="postgres:$DSN"
  THREATD_EXPLAIN_DSN=$explain_dsn go test -count=1 -v -run '^TestExplainAtScale$' ./storage/ > "$D/explain.txt" 2>&1 || echo "EXPLAIN: a page read scans or sorts (see $D/explain.txt)"
  "$BIN" token issue --config "$CFG" --email bench@example.com > "$D/token"
  echo "$rates" > "$D/rates"; echo "$reimport" > "$D/reimport"
  else echo "== $backend: reusing the database of the last run (import figures from it)"; fi
  rates=$(cat "$D/rates"); reimport=$(cat "$D/reimport")
  export BENCH_TOKEN; BENCH_TOKEN=$(cat "$D/token")
  export BENCH_N=$N

  echo "== $backend: start-up"
  rm -f "$D/rss-serve" "$D/rss-serve.stop"; sample_rss "$D/rss-serve" & sampler=$!
  start=$(date +%s.%N)
  "$BIN" serve --config "$CFG" 2>"$D/serve.log" & daemon=$!
  url="https://127.0.0.1:18443/functions/v1/check-malicious?report_type=package&resource_identifier=bench-npm-0000000&ecosystem=npm"
  healthz_first=""
  until curl -sk -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $BENCH_TOKEN" "$url" 2>/dev/null | grep -q 200; do
    if [ -z "$healthz_first" ] && curl -sk -o /dev/null https://127.0.0.1:18443/healthz 2>/dev/null; then
      healthz_first=$(python3 -c "import time; print('%.2f' % (time.time() - $start))")
    fi
    sleep 0.1
  done
  startup=$(python3 -c "import time; print('%.1f' % (time.time() - $start))")
  mkdir -p "$D/fw"
  rm -f "$D/fw/oci.digest"
  "$WORK/threatd-bench" upstream -listen 127.0.0.1:18445 -dir "$D/fw" & upstream=$!
  # It makes its files first (the image layer is 256 MiB), then listens.
  for _ in $(seq 1 120); do [ -f "$D/fw/oci.digest" ] && curl -s -o /dev/null http://127.0.0.1:18445/v2/ && break; sleep 0.5; done
  FWDOC=/functions/v1/firewall/npm/fw-bench
  FWFILE=/functions/v1/firewall/npm/fw-bench/-/fw-bench-1.0.0.tgz
  # Fill the firewall's cache, and keep its answer for the trivial handler.
  curl -sk -H "Authorization: Bearer $BENCH_TOKEN" -H "Accept: application/vnd.npm.install-v1+json" "https://127.0.0.1:18443$FWDOC" -o "$D/fw/rendered.json"
  curl -sk -H "Authorization: Bearer $BENCH_TOKEN" "https://127.0.0.1:18443$FWFILE" -o /dev/null
  # The other ecosystems: each one's metadata document (kept as served,
  # for the trivial handler) and its 1.0.0 file, the same 16 MiB, cached.
  ECOS="maven cargo rubygems nuget"
  declare -A ECODOC=([maven]=/functions/v1/firewall/maven/com/example/fw-bench/maven-metadata.xml [cargo]=/functions/v1/firewall/cargo/fw/-b/fw-bench
    [rubygems]=/functions/v1/firewall/rubygems/info/fw-bench [nuget]=/functions/v1/firewall/nuget/res/PackageBaseAddress_3.0.0/fw-bench/index.json)
  declare -A ECOFILE=([maven]=/functions/v1/firewall/maven/com/example/fw-bench/1.0.0/fw-bench-1.0.0.jar [cargo]=/functions/v1/firewall/cargo/crates/fw-bench/1.0.0/download
    [rubygems]=/functions/v1/firewall/rubygems/gems/fw-bench-1.0.0.gem [nuget]=/functions/v1/firewall/nuget/res/PackageBaseAddress_3.0.0/fw-bench/1.0.0/fw-bench.1.0.0.nupkg)
  for eco in $ECOS; do
    curl -sk -H "Authorization: Bearer $BENCH_TOKEN" "https://127.0.0.1:18443${ECODOC[$eco]}" -o "$D/fw/$eco.doc"
    curl -sk -H "Authorization: Bearer $BENCH_TOKEN" "https://127.0.0.1:18443${ECOFILE[$eco]}" -o /dev/null
  done
  OCIBLOB=/v2/library/fw-bench/blobs/$(cat "$D/fw/oci.digest")
  curl -sk -H "Authorization: Bearer $BENCH_TOKEN" "https://127.0.0.1:18446/v2/library/fw-bench/manifests/1.0" -o /dev/null
  "$WORK/threatd-bench" trivial -listen 127.0.0.1:18444 -cert "$D/data/tls/cert.pem" -key "$D/data/tls/key.pem" -files "$D/fw" & trivial=$!
  sleep 1

  echo "== $backend: load ($DUR per run, 32 connections; trivial and threatd alternate)"
  T=https://127.0.0.1:18444; S=https://127.0.0.1:18443
  # The first seconds after start-up are measured apart (cold caches: the
  # storage's pages, the record cache, the heap just after the index load),
  # then both servers are warmed up before the side-by-side runs.
  topper=""
  if [ "${BENCH_ONLY:-}" != firewall ]; then
  BENCH_HIT=10 wrk_run "$backend-cold" 32 "$S" "$WORK/check.lua"
  # The index's spill (cache.spill) fills in the background after the
  # index loads; until a report's entry is written its hits read storage.
  # The side-by-side runs start once it is full: that is how the daemon
  # serves from then on (the cold run above is the time before).
  for _ in $(seq 1 1200); do grep -q '"index spill filled"' "$D/serve.log" && break; sleep 0.5; done
  # So does the storage's integrity check at start-up (quick_check, a
  # core for 2.5 minutes at 1M reports on SQLite).
  if [ "$backend" = sqlite ]; then
    for _ in $(seq 1 1200); do grep -q 'integrity check' "$D/serve.log" && break; sleep 0.5; done
  fi
  integrity=$(python3 - "$D/serve.log" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    if '"integrity check passed (quick_check)"' in line:
        print("passed in %.1f s" % (json.loads(line)["took_ms"] / 1000)); break
PY
)
  spill=$(python3 - "$D/serve.log" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    if '"index spill filled"' in line:
        r = json.loads(line)
        print("%.1f s after start-up, %d reports, %.0f MB" % (r["took_ms"] / 1000, r["entries"], r["bytes"] / 1e6))
        break
else:
    print("not filled within 10 minutes")
PY
)
  fi
  # The exposure detector's look at the changes before the start (the
  # whole import, the first time: docs/exposure.md) takes a core too.
  for _ in $(seq 1 2400); do grep -q '"exposure: looked at the changes made before the start"' "$D/serve.log" && break; sleep 0.5; done
  exposure_startup=$(python3 - "$D/serve.log" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    if '"exposure: looked at the changes made before the start"' in line:
        print("%.1f s" % (json.loads(line)["took_ms"] / 1000)); break
else:
    print("not within 20 minutes")
PY
)
  if [ "${BENCH_ONLY:-}" = firewall ]; then
    # Not measured here, but waited for: its filling takes a core.
    for _ in $(seq 1 1200); do grep -q '"index spill filled"' "$D/serve.log" && break; sleep 0.5; done
  else
  BENCH_HIT=50 wrk_run "$backend-warmup" 32 "$S" "$WORK/check.lua"
  wrk_run "$backend-trivial-warmup" 32 "$T" "$WORK/trivial.lua"
  top -b -d 5 -n 12 > "$D/top.txt" 2>/dev/null & topper=$!
  wrk_run "$backend-trivial1" 32 "$T" "$WORK/trivial.lua"
  BENCH_HIT=10 wrk_run "$backend-check10" 32 "$S" "$WORK/check.lua"
  wrk_run "$backend-trivial2" 32 "$T" "$WORK/trivial.lua"
  BENCH_HIT=50 wrk_run "$backend-check50" 32 "$S" "$WORK/check.lua"
  # Sightings (docs/api/sightings.md): POST /sightings at 2,000 a second,
  # an open loop, each naming a random report by what it names, while the
  # trivial handler and then check-malicious are measured beside it (the
  # load takes CPU from both: the ratio is what must hold).
  "$WORK/threatd-bench" blocked -url "$S/functions/v1/sightings" -token "$BENCH_TOKEN" -rate "${BENCH_SIGHTINGS_RATE:-2000}" -duration "$((2 * ${DUR%s} + 8))s" -n "$N" \
    -body '{"report_type":"package","resource_identifier":"bench-npm-%d","ecosystem":"npm","type":"seen","source":"bench"}' > "$WORK/sightings-$backend.txt" & sighter=$!
  sleep 4
  wrk_run "$backend-trivial-sightings" 32 "$T" "$WORK/trivial.lua"
  BENCH_HIT=10 wrk_run "$backend-check10-sightings" 32 "$S" "$WORK/check.lua"
  wait $sighter
  wrk_run "$backend-latest" 8 "$S" "$WORK/latest.lua"
  BENCH_QUERY="?ecosystem=pypi" wrk_run "$backend-latest-pypi" 8 "$S" "$WORK/latest.lua"
  wrk_run "$backend-batch" 1 "$S" "$WORK/batch.lua"
  # TAXII: the first page, then pages from random points of the collection
  # (from its first report's date added to now).
  first=$(curl -sk -D - -o /dev/null -H "Authorization: Bearer $BENCH_TOKEN" "$S/taxii2/api/collections/threats/manifest/?limit=3" | awk -F': ' 'tolower($1)=="x-taxii-date-added-last"{print $2}' | tr -d '\r')
  export BENCH_T0 BENCH_T1
  BENCH_T0=$(python3 -c "from datetime import datetime, timezone; print(int(datetime.strptime('$first'[:26], '%Y-%m-%dT%H:%M:%S.%f').replace(tzinfo=timezone.utc).timestamp()*1e6))")
  BENCH_T1=$(python3 -c "import time; print(int(time.time()*1e6))")
  BENCH_T0="" wrk_run "$backend-taxii-first" 8 "$S" "$WORK/taxii.lua"
  wrk_run "$backend-taxii" 8 "$S" "$WORK/taxii.lua"
  # TAXII: a first full pull of the collection, by next, pages of 1,000.
  "$WORK/threatd-bench" taxii-pull -url "$S" -limit 1000 > "$WORK/taxii-pull-$backend.txt" 2>&1 || true
  wrk_run "$backend-osvquery" 32 "$S" "$WORK/osvquery.lua"
  wrk_run "$backend-submit" 16 "$S" "$WORK/submit.lua"
  BENCH_FILE=$WORK/scan-5000.json wrk_run "$backend-scan" 1 "$S" "$WORK/scan.lua"
  fi
  BENCH_PATH=/files/rendered.json wrk_run "$backend-fwdoc-trivial" 32 "$T" "$WORK/get.lua"
  BENCH_PATH=$FWDOC wrk_run "$backend-fwdoc" 32 "$S" "$WORK/get.lua"
  BENCH_PATH=/files/file.tgz wrk_run "$backend-fwfile-trivial" 4 "$T" "$WORK/get.lua"
  BENCH_PATH=$FWFILE wrk_run "$backend-fwfile" 4 "$S" "$WORK/get.lua"
  for eco in $ECOS; do
    BENCH_PATH=/files/$eco.doc wrk_run "$backend-$eco-doc-trivial" 32 "$T" "$WORK/get.lua"
    BENCH_PATH=${ECODOC[$eco]} wrk_run "$backend-$eco-doc" 32 "$S" "$WORK/get.lua"
    BENCH_PATH=${ECOFILE[$eco]} wrk_run "$backend-$eco-file" 4 "$S" "$WORK/get.lua"
  done
  # Editor extensions, Composer and the workflow scan: extensions.sh.
  . cmd/threatd-bench/extensions.sh
  if [ -z "${BENCH_EXT_ONLY:-}" ]; then
  # Package analysis beside the firewall (docs/analysis.md): listing 1,000
  # packages queues their new versions (in quarantine), then the document
  # and the tarball are measured again, as above, while they are analysed;
  # then the time until the queue is empty.
  queued_at=$(date +%s.%N)
  for i in $(seq 0 999); do echo "url = \"$S/functions/v1/firewall/npm/fw-ana-$i\""; echo 'output = "/dev/null"'; done > "$WORK/ana-urls.txt"
  curl -sk -H "Authorization: Bearer $BENCH_TOKEN" --parallel --parallel-max 8 -K "$WORK/ana-urls.txt"
  BENCH_PATH=/files/rendered.json wrk_run "$backend-fwdoc-trivial-ana" 32 "$T" "$WORK/get.lua"
  BENCH_PATH=$FWDOC wrk_run "$backend-fwdoc-ana" 32 "$S" "$WORK/get.lua"
  BENCH_PATH=/files/file.tgz wrk_run "$backend-fwfile-trivial-ana" 4 "$T" "$WORK/get.lua"
  BENCH_PATH=$FWFILE wrk_run "$backend-fwfile-ana" 4 "$S" "$WORK/get.lua"
  metric() { curl -s http://127.0.0.1:19464/metrics | awk -v m="$1" '$1==m{printf "%d", $2}'; }
  during=$(( $(metric threatd_analysis_queue_queued) + $(metric threatd_analysis_queue_running) ))
  for _ in $(seq 1 1200); do
    [ "$(( $(metric threatd_analysis_queue_queued) + $(metric threatd_analysis_queue_running) ))" = 0 ] && [ -n "$(metric threatd_analysis_queue_queued)" ] && break; sleep 0.5
  done
  ana_took=$(python3 -c "import time; print('%.0f' % (time.time() - $queued_at))")
  ana_done=$(curl -s http://127.0.0.1:19464/metrics | awk '/^threatd_analysis_total\{ecosystem="npm"/{split($0, a, "verdict=\""); split(a[2], b, "\""); n[b[1]] += $2} END {for (v in n) printf "%s %d, ", v, n[v]}')
  ana_p95=$(curl -s http://127.0.0.1:19464/metrics | python3 -c "
import sys, re
b = {}
for line in sys.stdin:
    m = re.match(r'threatd_analysis_duration_seconds_bucket\{ecosystem=\"npm\",le=\"([^\"]+)\"\} (\S+)', line)
    if m: b[m.group(1)] = float(m.group(2))
total = b.get('+Inf', 0)
for le, n in sorted(((float(k), v) for k, v in b.items() if k != '+Inf')):
    if total and n >= 0.95 * total: print('at most %gs' % le); break
")
  # An image layer of 256 MiB through the image registry, against the same
  # bytes from the trivial handler, with the daemon's resident memory
  # sampled as it streams (it must stay flat: a buffer, not the layer).
  rss_before=$(awk '/^VmRSS/{print $2}' /proc/$daemon/status)
  ( peak=0; while [ ! -f "$D/oci-rss.stop" ]; do r=$(awk '/^VmRSS/{print $2}' /proc/$daemon/status 2>/dev/null || echo 0); [ "${r:-0}" -gt "$peak" ] && peak=$r; sleep 0.2; done; echo "$peak" > "$D/oci-rss" ) & ocisampler=$!
  BENCH_PATH=/files/oci.blob wrk_run "$backend-oci-blob-trivial" 2 "$T" "$WORK/get.lua"
  BENCH_PATH=$OCIBLOB wrk_run "$backend-oci-blob" 2 https://127.0.0.1:18446 "$WORK/get.lua"
  touch "$D/oci-rss.stop"; wait $ocisampler; rm -f "$D/oci-rss.stop"
  oci_rss="$((rss_before / 1024)) MB before, $(( $(cat "$D/oci-rss") / 1024 )) MB at most while streaming"
  # Latency, one connection: the upstream's own answer fetched directly
  # (plain HTTP, as the firewall reaches it) and through the firewall.
  BENCH_PATH=/direct/fw-bench wrk_run "$backend-fwdoc-direct1" 1 http://127.0.0.1:18445 "$WORK/get.lua"
  BENCH_PATH=/files/rendered.json wrk_run "$backend-fwdoc-trivial1" 1 "$T" "$WORK/get.lua"
  BENCH_PATH=$FWDOC wrk_run "$backend-fwdoc1" 1 "$S" "$WORK/get.lua"
  # The firewall's policy (docs/firewall.md, "Policy"). The document above
  # already holds its 3 newest versions back (quarantine, on by default).
  # Now 2,000 refused requests a second (a held tarball) for 60 s, each a
  # decision to record, while the document and the same bytes from the
  # trivial handler are measured side by side; then the decisions recorded
  # are counted.
  FWHELD=/functions/v1/firewall/npm/fw-bench/-/fw-bench-1.19.9.tgz
  held_since=$(date -u +%Y-%m-%dT%H:%M:%SZ); sleep 1
  "$WORK/threatd-bench" blocked -url "$S$FWHELD" -token "$BENCH_TOKEN" -rate "${BENCH_BLOCKED_RATE:-2000}" -duration 60s > "$WORK/blocked-$backend.txt" & blocker=$!
  sleep 5
  BENCH_PATH=/files/rendered.json wrk_run "$backend-fwdoc-trivial-blocked" 32 "$T" "$WORK/get.lua"
  BENCH_PATH=$FWDOC wrk_run "$backend-fwdoc-blocked" 32 "$S" "$WORK/get.lua"
  wait $blocker
  sleep 3   # the recorder writes every 250 ms
  recorded=$("$BIN" firewall decisions --config "$CFG" --since "$held_since" --json | grep -c '"version":"1.19.9","purl":"pkg:npm/fw-bench@1.19.9","rule":"quarantine","action":"block"' || true)
  # The decision list at 10 M rows: filled straight into the table over the
  # last 29 days (4 a second), then pages read from random times and
  # random cursors, as an admin.
  echo "== $backend: 10 M firewall decisions"
  "$BIN" user add --config "$CFG" --email bench-admin@example.com --role admin >/dev/null 2>&1 || true
  export BENCH_ADMIN_TOKEN; BENCH_ADMIN_TOKEN=$("$BIN" token issue --config "$CFG" --email bench-admin@example.com)
  t0=$(( $(date +%s) - 29 * 86400 ))
  fill_start=$(date +%s.%N)
  if [ "$backend" = postgres ]; then
    runuser -u postgres -- psql -h "$PGTMP" -p 55439 -U postgres -d threatd_bench -qc "INSERT INTO firewall_decisions (at, ecosystem, name, version, purl, rule, action, threat_ids, until, user_email, client_ip)
      SELECT to_timestamp($t0 + i * 0.25), 'npm', 'pkg-' || (i % 5000), '1.0.' || (i % 97), 'pkg:npm/pkg-' || (i % 5000) || '@1.0.' || (i % 97),
        CASE WHEN i % 3 = 0 THEN 'quarantine' ELSE 'malicious' END, 'block', CASE WHEN i % 3 = 0 THEN '' ELSE '01a214f2-af98-7eea-a529-30b6c90d2932' END,
        NULL, 'ci-' || (i % 50) || '@example.com', '10.0.' || (i % 250) || '.' || (i % 200) FROM generate_series(0, 9999999) AS i" -c "ANALYZE firewall_decisions"
    maxseq=$(runuser -u postgres -- psql -h "$PGTMP" -p 55439 -U postgres -d threatd_bench -tAc "SELECT max(seq) FROM firewall_decisions")
    runuser -u postgres -- psql -h "$PGTMP" -p 55439 -U postgres -d threatd_bench -c "EXPLAIN ANALYZE SELECT * FROM firewall_decisions WHERE at >= to_timestamp($t0 + 1234567) ORDER BY at, seq LIMIT 101" \
      -c "EXPLAIN ANALYZE SELECT * FROM firewall_decisions WHERE (at, seq) > (to_timestamp($t0 + 1234567), 4938271) ORDER BY at, seq LIMIT 101" > "$D/explain-decisions.txt"
  else
    python3 - "$D/data/threatd.db" "$t0" > "$D/explain-decisions.txt" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], timeout=60)
t0 = int(sys.argv[2])
# A reused database has them already.
if c.execute("SELECT count(*) FROM firewall_decisions").fetchone()[0] < 10000000:
  c.execute("""WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 9999999)
INSERT INTO firewall_decisions (at, ecosystem, name, version, purl, rule, action, threat_ids, until, user_email, client_ip)
SELECT strftime('%Y-%m-%d %H:%M:%f', ? + i * 0.25, 'unixepoch') || '+00:00', 'npm', 'pkg-' || (i % 5000), '1.0.' || (i % 97),
  'pkg:npm/pkg-' || (i % 5000) || '@1.0.' || (i % 97), CASE WHEN i % 3 = 0 THEN 'quarantine' ELSE 'malicious' END, 'block',
  CASE WHEN i % 3 = 0 THEN '' ELSE '01a214f2-af98-7eea-a529-30b6c90d2932' END, NULL, 'ci-' || (i % 50) || '@example.com',
  '10.0.' || (i % 250) || '.' || (i % 200) FROM n""", (t0,))
  c.commit()
c.execute("ANALYZE firewall_decisions")
at = c.execute("SELECT strftime('%Y-%m-%d %H:%M:%f', ? + 1234567, 'unixepoch') || '+00:00'", (t0,)).fetchone()[0]
for q, args in [("SELECT * FROM firewall_decisions WHERE at >= ? ORDER BY at, seq LIMIT 101", (at,)),
                ("SELECT * FROM firewall_decisions WHERE (at, seq) > (?, ?) ORDER BY at, seq LIMIT 101", (at, 4938271))]:
    print(q)
    for row in c.execute("EXPLAIN QUERY PLAN " + q, args):
        print("  ", row[-1])
PY
    maxseq=$(python3 -c "import sqlite3; print(sqlite3.connect('$D/data/threatd.db').execute('SELECT max(seq) FROM firewall_decisions').fetchone()[0])")
  fi
  fill=$(python3 -c "import time; print('%.0f s' % (time.time() - $fill_start))")
  python3 - "$t0" "$maxseq" > "$WORK/decision-paths.txt" <<'PY'
import base64, random, sys
from datetime import datetime, timezone
t0, maxseq = int(sys.argv[1]), int(sys.argv[2])
for _ in range(500):
    t = datetime.fromtimestamp(t0 + random.randint(0, 29 * 86400), timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')
    print("/functions/v1/firewall/decisions?since=%s&limit=100" % t)
    c = base64.urlsafe_b64encode(b"d:%d" % random.randint(1, maxseq)).decode().rstrip("=")
    print("/functions/v1/firewall/decisions?cursor=%s&limit=100" % c)
PY
  BENCH_PATHS=$WORK/decision-paths.txt wrk_run "$backend-decisions" 8 "$S" "$WORK/decisions.lua"
  # Exposure (docs/exposure.md), SQLite: exposure.sh.
  if [ "$backend" = sqlite ]; then . cmd/threatd-bench/exposure.sh; fi
  # The web pages, 8 connections (no session: as a visitor).
  export BENCH_VT0 BENCH_VT1 BENCH_IDS=$D/ids.txt
  BENCH_VT0=$(python3 -c "from datetime import datetime, timezone; print(int(datetime(2024, 1, 1, tzinfo=timezone.utc).timestamp()*1e6))")
  BENCH_VT1=$(python3 -c "print($BENCH_VT0 + $N * 60 * 1000000)")
  : > "$BENCH_IDS"
  for k in $(seq 1 20); do
    t=$(python3 -c "import random; print(random.randint($BENCH_VT0, $BENCH_VT1))")
    curl -sk "$S/threats?after=$t.ffffffff-ffff-7fff-bfff-ffffffffffff" | grep -o 'href="/threats/[0-9a-f-]\{36\}"' | cut -d/ -f3 | tr -d '"' >> "$BENCH_IDS"
  done
  for page in home browse browse-deep browse-pypi browse-severity search-purl search-prefix search-indicator search-miss threat; do
    BENCH_WEB=$page wrk_run "$backend-web-$page" 8 "$S" "$WORK/web.lua"
  done
  # The community's pages (docs/community.md): 100 contributors with 20
  # verified reports each (2,000 reputation events), and a campaign of the
  # reports whose ids the pages above collected.
  export BENCH_CAMPAIGN BENCH_USERS=100
  run=$(date +%s)
  for u in $(seq -w 1 $BENCH_USERS); do
    "$BIN" user add --config "$CFG" --email "bench-user-$u@example.com" --name "bench-user-$u" >/dev/null 2>&1 || true
    "$BIN" token issue --config "$CFG" --email "bench-user-$u@example.com"
  done > "$D/user-tokens"
  python3 - "$D/user-tokens" "$run" > "$D/community-ids" <<'PY'
import json, ssl, sys, urllib.request, concurrent.futures
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
tokens = open(sys.argv[1]).read().split()
def submit(job):
    u, k = job
    body = json.dumps({"report_type": "package", "resource_identifier": "community-%s-%d-%d" % (sys.argv[2], u, k), "registry": "npm",
                       "threat_description": "Steals tokens at install time", "severity_level": ["critical", "high", "medium", "low"][k % 4]}).encode()
    req = urllib.request.Request("https://127.0.0.1:18443/functions/v1/submit-threat-report", body,
                                 {"Authorization": "Bearer " + tokens[u], "Content-Type": "application/json"})
    with urllib.request.urlopen(req, context=ctx) as r:
        return json.load(r)["threat_id"]
with concurrent.futures.ThreadPoolExecutor(16) as ex:
    for tid in ex.map(submit, [(u, k) for u in range(len(tokens)) for k in range(20)]):
        print(tid)
PY
  xargs -n 500 "$BIN" review verify --config "$CFG" < "$D/community-ids" > /dev/null
  BENCH_CAMPAIGN=$(python3 - "$BENCH_IDS" <<'PY'
import json, os, ssl, sys, urllib.request
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
ids = sorted(set(open(sys.argv[1]).read().split()))[:1000]
req = urllib.request.Request("https://127.0.0.1:18443/functions/v1/campaigns", json.dumps({"name": "bench campaign", "description": "The **bench** reports.", "threat_ids": ids}).encode(),
                             {"Authorization": "Bearer " + os.environ["BENCH_ADMIN_TOKEN"], "Content-Type": "application/json"})
with urllib.request.urlopen(req, context=ctx) as r:
    print(json.load(r)["campaign_id"])
PY
)
  for page in leaderboard leaderboard-30d profile campaign; do
    BENCH_WEB=$page wrk_run "$backend-web-$page" 8 "$S" "$WORK/web.lua"
  done
  # The block lists (docs/blocklists.md), once built: each format beside
  # the trivial handler serving the same bytes; then how long one
  # verification takes to reach the list.
  for _ in $(seq 1 1200); do grep -q '"block lists built"' "$D/serve.log" && break; sleep 0.5; done
  blbuilt=$(python3 - "$D/serve.log" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    if '"block lists built"' in line:
        r = json.loads(line)
        print("%.1f s after the index's load, %d domains, %d addresses" % (r["took_ms"] / 1000, r["domains"], r["addresses"]))
        break
else:
    print("not built within 10 minutes")
PY
)
  for f in domains rpz; do
    curl -sk -H "Authorization: Bearer $BENCH_TOKEN" "$S/functions/v1/blocklists/$f" -o "$D/fw/blocklist-$f"
    BENCH_PATH=/files/blocklist-$f wrk_run "$backend-blocklist-$f-trivial" 8 "$T" "$WORK/get.lua"
    BENCH_PATH=/functions/v1/blocklists/$f wrk_run "$backend-blocklist-$f" 8 "$S" "$WORK/get.lua"
  done
  # The Suricata rules: the first request gives every indicator its sid
  # (kept in the database), then served as the block lists are.
  start=$(date +%s.%N)
  for _ in $(seq 1 600); do
    code=$(curl -sk -o "$D/fw/suricata.rules" -w '%{http_code}' -H "Authorization: Bearer $BENCH_TOKEN" "$S/functions/v1/rules/suricata.rules")
    [ "$code" = 200 ] && break; sleep 0.5
  done
  end=$(date +%s.%N)
  surbuilt=$(python3 -c "print('%.1f s' % ($end - $start))")
  BENCH_PATH=/files/suricata.rules wrk_run "$backend-suricata-trivial" 8 "$T" "$WORK/get.lua"
  BENCH_PATH=/functions/v1/rules/suricata.rules wrk_run "$backend-suricata" 8 "$S" "$WORK/get.lua"
  blname="bench-update-$(date +%s).evil-updates.example"
  blid=$(curl -sk -H "Authorization: Bearer $BENCH_TOKEN" -H 'Content-Type: application/json' \
    -d "{\"report_type\":\"domain\",\"resource_identifier\":\"$blname\",\"threat_description\":\"bench\"}" \
    "$S/functions/v1/submit-threat-report" | python3 -c 'import json,sys; print(json.load(sys.stdin)["threat_id"])')
  "$BIN" review verify --config "$CFG" "$blid" > /dev/null
  start=$(date +%s.%N)
  for _ in $(seq 1 500); do curl -sk -H "Authorization: Bearer $BENCH_TOKEN" "$S/functions/v1/blocklists/domains" | grep -q "$blname" && break; sleep 0.02; done
  end=$(date +%s.%N)
  blupdate=$(python3 -c "print('%.2f s' % ($end - $start))")
  start=$(date +%s.%N)
  for _ in $(seq 1 500); do curl -sk -H "Authorization: Bearer $BENCH_TOKEN" "$S/functions/v1/rules/suricata.rules" | grep -q "$blname" && break; sleep 0.02; done
  end=$(date +%s.%N)
  surupdate=$(python3 -c "print('%.2f s' % ($end - $start))")
  fi   # BENCH_EXT_ONLY
  kill $trivial $daemon ${topper:-} $upstream 2>/dev/null; wait $daemon 2>/dev/null || true
  touch "$D/rss-serve.stop"; wait $sampler

  if [ "${BENCH_ONLY:-}" != firewall ]; then
  echo "== $backend: export osv"
  rm -rf "$D/osv" "$D/rss-export" "$D/rss-export.stop"; sample_rss "$D/rss-export" & sampler=$!
  start=$(date +%s.%N)
  "$BIN" export osv "$D/osv" --config "$CFG" > "$D/export.out" 2>&1 || echo "export osv failed (see $D/export.out)"
  end=$(date +%s.%N); touch "$D/rss-export.stop"; wait $sampler
  export_osv=$(python3 -c "print('%.1f s, %.0f reports/s' % ($end - $start, $N / ($end - $start)))")
  export_size=$(du -sh "$D/osv" | cut -f1); rm -rf "$D/osv"
  # Campaign suggestions (docs/campaigns.md): one pass over every
  # verified report's texts and the indicators.
  echo "== $backend: campaign suggestions"
  rm -f "$D/rss-suggest" "$D/rss-suggest.stop"; sample_rss "$D/rss-suggest" & sampler=$!
  start=$(date +%s.%N)
  "$BIN" campaign suggestions --limit 5 --config "$CFG" > "$D/suggest.out" 2> "$D/suggest.err" || echo "campaign suggestions failed (see $D/suggest.err)"
  end=$(date +%s.%N); touch "$D/rss-suggest.stop"; wait $sampler
  suggest=$(python3 -c "print('%.1f s' % ($end - $start))")
  # The other sources (docs/ingestion.md): a generated file of
  # $BENCH_SOURCE_N records each, as the source publishes it, into a
  # database of its own (SQLite only), imported and then imported again.
  sources=""
  if [ "$backend" = sqlite ]; then
    SN=${BENCH_SOURCE_N:-1000000}
    echo "== $backend: urlhaus, threatfox and datadog imports ($SN records each)"
    python3 - "$WORK/sources" "$SN" <<'PY'
import datetime, json, os, sys
root, n = sys.argv[1], int(sys.argv[2])
t0 = datetime.datetime(2026, 11, 25, 10, 0, 0)
os.makedirs(root + "/samples/npm", exist_ok=True)
with open(root + "/urlhaus.csv", "w") as f:
    f.write("################################################################\n# abuse.ch URLhaus Database Dump (CSV)                         #\n"
            "################################################################\n#\n# id,dateadded,url,url_status,last_online,threat,tags,urlhaus_link,reporter\n")
    # Newest first, as URLhaus publishes its export: ids and dateadded
    # descending (a row every 31 s).
    for i in range(n):
        uid, at = 5000000 + n - i, t0 - datetime.timedelta(seconds=31 * i)
        f.write('"%d","%s","http://bench-%d.urlhaus-bench.example/x/%d.exe","online","","malware_download","exe,bench","https://urlhaus.abuse.ch/url/%d/","bench"\n'
                % (uid, at.strftime("%Y-%m-%d %H:%M:%S"), i % 5000, i, uid))
with open(root + "/threatfox.json", "w") as f:
    f.write("{\n")
    # Newest first, as ThreatFox publishes its export.
    for i in range(n):
        ioc = {"ioc_value": "c2-%d.threatfox-bench.example" % i, "ioc_type": "domain", "threat_type": "botnet_cc", "malware": "win.bench",
               "malware_alias": None, "malware_printable": "Bench", "first_seen_utc": (t0 - datetime.timedelta(seconds=31 * i)).strftime("%Y-%m-%d %H:%M:%S"), "last_seen_utc": None,
               "confidence_level": 75, "reference": None, "tags": "bench", "anonymous": "0", "reporter": "bench"}
        f.write('    "%d": [\n        %s\n    ]%s\n' % (2000000 + n - i, json.dumps(ioc), "," if i < n - 1 else ""))
    f.write("}\n")
with open(root + "/samples/npm/manifest.json", "w") as f:
    f.write("{\n" + ",\n".join('  "datadog-bench-%d": %s' % (i, "null" if i % 3 == 0 else '["1.0.%d"]' % (i % 10)) for i in range(n)) + "\n}\n")
PY
    for src in urlhaus threatfox datadog; do
      SD="$WORK/sources/db-$src"; rm -rf "$SD"; mkdir -p "$SD"
      printf 'data_dir: %s\nplugins: {dir: %s}\nstorage: {plugin: sqlite}\n' "$SD/data" "$ROOT/bin/plugins" > "$SD/threatd.yaml"
      "$BIN" migrate --config "$SD/threatd.yaml" > /dev/null 2>&1
      case $src in urlhaus) in=$WORK/sources/urlhaus.csv ;; threatfox) in=$WORK/sources/threatfox.json ;; datadog) in=$WORK/sources/samples ;; esac
      start=$(date +%s.%N); "$BIN" import $src "$in" --config "$SD/threatd.yaml" > "$SD/import1.out" 2>&1 || echo "import $src failed (see $SD/import1.out)"
      mid=$(date +%s.%N); "$BIN" import $src "$in" --config "$SD/threatd.yaml" > "$SD/import2.out" 2>&1 || echo "re-import $src failed (see $SD/import2.out)"
      end=$(date +%s.%N)
      sources="$sources| $src: import / re-import of $SN records | $(python3 -c "print('%.0f / %.0f records/s' % ($SN / ($mid - $start), $SN / ($end - $mid)))") ($(awk '/^imported/{i=$2} /^unchanged/{u=$2} END{print i+0 " imported"}' "$SD/import1.out"), $(awk '/^unchanged/{print $2+0 " unchanged"}' "$SD/import2.out")) |
"
      if [ $src = urlhaus ]; then
        # --full: a file without every 100th row withdraws those reports;
        # the whole file again restores them.
        awk '/^#/ || (++n % 100)' "$in" > "$WORK/sources/urlhaus-less.csv"
        start=$(date +%s.%N); "$BIN" import urlhaus --full "$WORK/sources/urlhaus-less.csv" --config "$SD/threatd.yaml" > "$SD/full1.out" 2>&1 || echo "import --full failed (see $SD/full1.out)"
        mid=$(date +%s.%N); "$BIN" import urlhaus --full "$in" --config "$SD/threatd.yaml" > "$SD/full2.out" 2>&1 || echo "import --full again failed (see $SD/full2.out)"
        end=$(date +%s.%N)
        sources="$sources| urlhaus --full: 1 % of rows left out / listed again | $(python3 -c "print('%.1f s / %.1f s' % ($mid - $start, $end - $mid))") ($(awk '/^withdrawn/{print $2+0 " withdrawn"}' "$SD/full1.out"), $(awk '/^restored/{print $2+0 " restored"}' "$SD/full2.out")) |
"
      fi
    done
    rm -rf "$WORK/sources"
  fi
  fi
  [ "$backend" = postgres ] && pg_stop

  read -r r1 r2 r3 <<<"$rates"
  if [ "${BENCH_ONLY:-}" != firewall ]; then
    read -r t1 _ _ _ < <(res "$backend-trivial1"); read -r t2 _ _ _ < <(res "$backend-trivial2")
    triv=$(python3 -c "print('%.0f' % (($t1 + $t2) / 2))")
  fi
  if [ -n "${BENCH_EXT_ONLY:-}" ]; then
    { echo "### $backend: editor extensions, Composer, workflow scan (BENCH_ONLY=extensions)"; echo
      echo "| firewall (HTTPS, cached upstream) | conns | requests/s | p50 | p99 | non-2xx | vs the same bytes from the trivial handler |"
      echo "|---|---|---|---|---|---|---|"; cat "$WORK/extensions-$backend.md"; echo; } | tee -a "$WORK/report.md"
    continue
  fi
  {
    if [ "${BENCH_ONLY:-}" != firewall ]; then
    echo "### $backend, $N verified reports"
    echo
    echo "| measure | value |"
    echo "|---|---|"
    echo "| import: first 100k / last 100k / overall | $r1 / $r2 / $r3 records/s |"
    echo "| re-import (all unchanged) | $reimport records/s |"
    echo "| RSS at import: CLI / source plugin / storage plugin | $(rss_of "$D/rss-import" threatd) / $(rss_of "$D/rss-import" threatd-source-osv) / $(rss_of "$D/rss-import" "threatd-storage-$backend") |"
    echo "| start-up: /healthz answers / check-malicious answers | ${healthz_first:-<0.1} s / $startup s |"
    echo "| index spill (cache.spill) filled | $spill |"
    read -r st _ _ _ < <(res "$backend-trivial-sightings"); read -r sc _ _ _ < <(res "$backend-check10-sightings")
    echo "| POST /sightings, 2,000 a second beside the trivial and check runs | $(cat "$WORK/sightings-$backend.txt") |"
    echo "| check, 10 % hits, vs the trivial handler, both beside those sightings | $(python3 -c "print('%.0f %%' % (100 * float('$sc' or 0) / float('$st' or 1)))") |"
    echo "| TAXII full pull by next, pages of 1,000 | $(cat "$WORK/taxii-pull-$backend.txt") |"
    echo "| export osv (every verified report, $export_size of archives) | $export_osv |"
    echo "| campaign suggestions over every verified report ($(tail -1 "$D/suggest.err" | cut -d';' -f1)) | $suggest |"
    echo "| RSS at campaign suggestions: CLI (anonymous part) / storage plugin (anonymous part) | $(rss_of "$D/rss-suggest" threatd) ($(anon_of "$D/rss-suggest" threatd)) / $(rss_of "$D/rss-suggest" "threatd-storage-$backend") ($(anon_of "$D/rss-suggest" "threatd-storage-$backend")) |"
    echo "| RSS at export osv: OSV exporter (anonymous part) / storage plugin (anonymous part) | $(rss_of "$D/rss-export" threatd-exporter-osv) ($(anon_of "$D/rss-export" threatd-exporter-osv)) / $(rss_of "$D/rss-export" "threatd-storage-$backend") ($(anon_of "$D/rss-export" "threatd-storage-$backend")) |"
    printf '%s' "$sources"
    echo "| block lists built (from the reads of the spill's fill; s after the index's load) | ${blbuilt:-not measured} |"
    for f in domains rpz; do
      read -r brps _ bp99 bbad < <(res "$backend-blocklist-$f"); read -r trps _ _ _ < <(res "$backend-blocklist-$f-trivial")
      echo "| block list \`$f\` ($(stat -c %s "$D/fw/blocklist-$f" 2>/dev/null || echo 0) bytes), 8 conns: served / the same bytes from the trivial handler | $brps / $trps requests/s = $(python3 -c "print('%.0f %%' % (100 * float('$brps' or 0) / float('$trps' or 1)))"); p99 $bp99; non-2xx $bbad |"
    done
    echo "| one verification: on the \`domains\` list after | ${blupdate:-not measured} |"
    read -r srps _ sp99 sbad < <(res "$backend-suricata"); read -r strps _ _ _ < <(res "$backend-suricata-trivial")
    echo "| Suricata rules: first request (every indicator given its sid) | ${surbuilt:-not measured} |"
    echo "| Suricata rules ($(stat -c %s "$D/fw/suricata.rules" 2>/dev/null || echo 0) bytes), 8 conns: served / the same bytes from the trivial handler | $srps / $strps requests/s = $(python3 -c "print('%.0f %%' % (100 * float('$srps' or 0) / float('$strps' or 1)))"); p99 $sp99; non-2xx $sbad |"
    echo "| one verification: in the Suricata rules after | ${surupdate:-not measured} |"
    echo "| RSS serving: daemon / storage plugin (anonymous part) | $(rss_of "$D/rss-serve" threatd) / $(rss_of "$D/rss-serve" "threatd-storage-$backend") ($(anon_of "$D/rss-serve" "threatd-storage-$backend")) |"
    echo "| anonymous memory serving: the daemon and every plugin, each at its peak, added up | $(anon_total "$D/rss-serve") |"
    echo "| integrity check at start-up (SQLite's quick_check, nice 19) | ${integrity:-not run} |"
    echo
    echo "| load (wrk -t1, HTTPS) | conns | requests/s | p50 | p99 | non-2xx | vs trivial |"
    echo "|---|---|---|---|---|---|---|"
    for row in "trivial echo handler (mean of 2 runs):trivial1:32" "check, 10 % hits, first 10 s after start-up (cold):cold:32" "check, 10 % hits:check10:32" "check, 50 % hits (harsh):check50:32" \
               "trivial echo handler, beside POST /sightings at 2,000/s:trivial-sightings:32" "check, 10 % hits, beside POST /sightings at 2,000/s:check10-sightings:32" \
               "query-latest:latest:8" "query-latest?ecosystem=pypi:latest-pypi:8" "POST check, 1,000 queries:batch:1" "TAXII objects, first page of 100:taxii-first:8" \
               "TAXII objects, 100 from a random added_after:taxii:8" "OSV query, 50 % hits:osvquery:32" "submit (new reports):submit:16" \
               "POST /scan, a 5,000-package package-lock.json:scan:1"; do
      IFS=: read -r label key conns <<<"$row"
      read -r rps p50 p99 bad < <(res "$backend-$key")
      [ "$key" = trivial1 ] && rps=$triv
      ratio=$(python3 -c "print('%.0f %%' % (100 * float('$rps' or 0) / $triv))")
      echo "| $label | $conns | $rps | $p50 | $p99 | $bad | $ratio |"
    done
    echo
    echo "| web page (anonymous, HTTPS, 8 connections) | requests/s | p50 | p99 | non-2xx | vs trivial |"
    echo "|---|---|---|---|---|---|"
    for row in "home (search box, 20 latest):home" "/threats (browse, first page, total):browse" "/threats from a random keyset position:browse-deep" \
               "/threats?ecosystem=pypi:browse-pypi" "/threats?severity=high:browse-severity" "search, a purl (hit):search-purl" \
               "search, a name prefix:search-prefix" "search, an exfiltration domain (indicator):search-indicator" "search, a clean name (miss):search-miss" \
               "a threat's page (random of $(wc -l < "$D/ids.txt") ids):threat" \
               "/leaderboard?period=all (100 contributors, 2,000 events):leaderboard" "/leaderboard?period=30d:leaderboard-30d" \
               "a contributor's profile (random of 100):profile" "a campaign's page ($(sort -u "$D/ids.txt" | head -1000 | wc -l) reports):campaign"; do
      IFS=: read -r label key <<<"$row"
      read -r rps p50 p99 bad < <(res "$backend-web-$key")
      ratio=$(python3 -c "print('%.0f %%' % (100 * float('$rps' or 0) / $triv))")
      echo "| $label | $rps | $p50 | $p99 | $bad | $ratio |"
    done
    echo
    echo "EXPLAIN of the web pages' statements: $(grep -c '^### ' "$D/explain.txt" 2>/dev/null || echo 0) statements, $(grep -E '^(ok|FAIL|--- )' "$D/explain.txt" | tail -1) (plans: $D/explain.txt)"
    echo
    else echo "### $backend, $N verified reports: the firewall's rows only (BENCH_ONLY=firewall)"; echo; fi
    echo "| firewall (HTTPS, cached upstream) | conns | requests/s | p50 | p99 | non-2xx | vs the same bytes from the trivial handler |"
    echo "|---|---|---|---|---|---|---|"
    for row in "trivial handler, the firewall's 200-version document:fwdoc-trivial:32:" "firewall, 200-version npm document:fwdoc:32:fwdoc-trivial" \
               "trivial handler, 16 MiB file:fwfile-trivial:4:" "firewall, 16 MiB tarball:fwfile:4:fwfile-trivial" \
               "upstream directly (plain HTTP), document:fwdoc-direct1:1:" "trivial handler (HTTPS), document:fwdoc-trivial1:1:" "firewall, document:fwdoc1:1:fwdoc-trivial1"; do
      IFS=: read -r label key conns ref <<<"$row"
      read -r rps p50 p99 bad < <(res "$backend-$key")
      ratio=""
      if [ -n "$ref" ]; then read -r rrps _ _ _ < <(res "$backend-$ref"); ratio=$(python3 -c "print('%.0f %%' % (100 * float('$rps' or 0) / float('$rrps' or 1)))"); fi
      echo "| $label | $conns | $rps | $p50 | $p99 | $bad | $ratio |"
    done
    for eco in $ECOS; do
      for row in "trivial handler, the $eco document:$eco-doc-trivial:32:" "firewall, $eco metadata document (200 versions):$eco-doc:32:$eco-doc-trivial" \
                 "firewall, $eco 16 MiB file:$eco-file:4:fwfile-trivial"; do
        IFS=: read -r label key conns ref <<<"$row"
        read -r rps p50 p99 bad < <(res "$backend-$key")
        ratio=""
        if [ -n "$ref" ]; then read -r rrps _ _ _ < <(res "$backend-$ref"); ratio=$(python3 -c "print('%.0f %%' % (100 * float('$rps' or 0) / float('$rrps' or 1)))"); fi
        echo "| $label | $conns | $rps | $p50 | $p99 | $bad | $ratio |"
      done
    done
    [ -f "$WORK/extensions-$backend.md" ] && cat "$WORK/extensions-$backend.md"
    pct() { python3 -c "print('%.0f %%' % (100 * float('$1' or 0) / float('$2' or 1)))"; }
    read -r dt _ _ _ < <(res "$backend-fwdoc-trivial"); read -r dd _ _ _ < <(res "$backend-fwdoc")
    read -r ft _ _ _ < <(res "$backend-fwfile-trivial"); read -r fd _ _ _ < <(res "$backend-fwfile")
    read -r adt _ _ _ < <(res "$backend-fwdoc-trivial-ana"); read -r add ap50 ap99 abad < <(res "$backend-fwdoc-ana")
    read -r aft _ _ _ < <(res "$backend-fwfile-trivial-ana"); read -r afd fp50 fp99 fbad < <(res "$backend-fwfile-ana")
    echo "| firewall, 200-version npm document, while 1,000 new versions are analysed ($during still queued after the runs) | 32 | $add | $ap50 | $ap99 | $abad | $(pct "$add" "$adt") (without analysis: $(pct "$dd" "$dt")) |"
    echo "| firewall, 16 MiB tarball, while they are analysed | 4 | $afd | $fp50 | $fp99 | $fbad | $(pct "$afd" "$aft") (without analysis: $(pct "$fd" "$ft")) |"
    echo "| 1,000 new versions (200 KB of JavaScript each, and the version before) listed, analysed | | | | | | ${ana_took} s; verdicts: ${ana_done}p95 ${ana_p95} each |"
    read -r ot _ _ _ < <(res "$backend-oci-blob-trivial"); read -r orps op50 op99 obad < <(res "$backend-oci-blob")
    echo "| trivial handler, a 256 MiB file | 2 | $ot | | | | |"
    echo "| image registry, a 256 MiB layer ($oci_rss) | 2 | $orps | $op50 | $op99 | $obad | $(python3 -c "print('%.0f %%' % (100 * float('$orps' or 0) / float('$ot' or 1)))") |"
    echo
    read -r dt _ _ _ < <(res "$backend-fwdoc-trivial"); read -r dd _ _ _ < <(res "$backend-fwdoc")
    read -r bt _ _ _ < <(res "$backend-fwdoc-trivial-blocked"); read -r bd p50 p99 bad < <(res "$backend-fwdoc-blocked")
    echo "| firewall policy | value |"
    echo "|---|---|"
    echo "| 2,000 held-tarball requests/s for 60 s: sent and answered | $(cat "$WORK/blocked-$backend.txt") |"
    echo "| decisions of them recorded (threatd firewall decisions) | $recorded |"
    echo "| the document beside that load: firewall / trivial handler | $bd / $bt requests/s = $(python3 -c "print('%.0f %%' % (100 * float('$bd' or 0) / float('$bt' or 1)))") (without the load: $(python3 -c "print('%.0f %%' % (100 * float('$dd' or 0) / float('$dt' or 1)))")); p99 $p99 |"
    if [ "$backend" = sqlite ]; then
      read -r lt _ _ _ < <(res "$backend-fwdoc-trivial-ledger"); read -r ld lp50 lp99 _ < <(res "$backend-fwdoc-ledger")
      echo "| 2,000 served 1 KB tarballs/s for 60 s: sent and answered / counted in the ledger | $(cat "$WORK/served-$backend.txt") / $ledger_counted |"
      echo "| the document beside that load: firewall / trivial handler | $ld / $lt requests/s = $(python3 -c "print('%.0f %%' % (100 * float('$ld' or 0) / float('$lt' or 1)))"); p99 $lp99 |"
      echo "| the exposure detector's look at the changes before the start (from the mark, or the day before) | $exposure_startup |"
      echo "$ledger_onoff"
      read -r er ep50 ep99 ebad < <(res "$backend-exposure")
      echo "| a version with 1,000,000 ledger rows (10,000 tokens) verified: exposures recorded / first page listed (s after the verification) | $exp_found / $exp_listed |"
      echo "| GET /exposure, a page of 100 (newest; and from the middle of the million), 8 conns | $er requests/s, p50 $ep50, p99 $ep99, non-2xx $ebad |"
      echo "| the ledger filled to $ledger_rows rows (100,000 packages, 10,000 tokens, 90 days) | in $ledger_fill |"
      echo "| at $ledger_rows ledger rows, a version with $led_want of them verified: exposures recorded / listed (s) | $led_found / $led_listed |"
      read -r ar ap50 ap99 abad < <(res "$backend-admin-exposure")
      echo "| at $ledger_rows ledger rows, the administrators' exposure page (log-in $login, page $admin_page; first and second page), 8 conns | $ar requests/s, p50 $ap50, p99 $ap99, non-2xx $abad |"
      read -r er ep50 ep99 ebad < <(res "$backend-exposure-10m")
      echo "| at $ledger_rows ledger rows, GET /exposure as above, 8 conns | $er requests/s, p50 $ep50, p99 $ep99, non-2xx $ebad |"
    fi
    read -r lr lp50 lp99 lbad < <(res "$backend-decisions")
    echo "| 10 M decisions: filled in | $fill |"
    echo "| decision list, a page of 100 from a random since or cursor (8 conns) | $lr requests/s, p50 $lp50, p99 $lp99, non-2xx $lbad |"
    echo
    echo "Plans of the decision list's statements at 10 M rows:"
    echo
    echo '```'
    cat "$D/explain-decisions.txt"
    echo '```'
    echo
  } | tee -a "$WORK/report.md"

done
echo "report: $WORK/report.md"
