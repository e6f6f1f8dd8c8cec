#!/usr/bin/env bash
# The dashboard's files served at / (server/http/h_web.c, docs/api.md "Web
# UI"): content types, caching, the Content-Security-Policy, JSON 404/405,
# and no way out of the --web folder (dot segments raw and percent-encoded,
# hidden files, symbolic links to files and folders outside, special files).
# Runs on a fixture folder made here, not on the built bundle.
#
#   web_test.sh BUILD_DIR WORK_DIR
set -euo pipefail
. "$(dirname "$0")/lib.sh"
setup "$@"

# the fixture: what esbuild writes, plus traps
mkdir -p site/assets site/sub/deeper outside
echo '<!doctype html><title>fixture</title>' > site/index.html
echo 'console.log(1)' > site/assets/app-AB12CD34.js
echo 'body{}' > site/assets/app-AB12CD34.css
echo 'body{}' > site/assets/plain.css
echo 'x' > site/sub/deeper/page.html
printf '\x89PNG' > site/shot.png
echo 'SECRET-OUTSIDE' > outside/secret.txt
echo 'SECRET-HIDDEN' > site/.hidden.txt
echo 'SECRET-EXT' > site/notes.conf
ln -s "$PWD/outside/secret.txt" site/link.txt
ln -s "$PWD/outside" site/linkdir
ln -s ../outside/secret.txt site/rel.txt
mkfifo site/fifo.txt
# a character device inside the folder is never opened (fstatat first)
mknod site/zero.txt c 1 5 2> /dev/null || ln -s /dev/zero site/zero.txt

start_server data --web "$PWD/site"

http GET / ''
expect "/ status" 200 "$CODE"
contains "/ is index.html" "<title>fixture</title>" "$BODY"
expect_grep "/ type" '^Content-Type: text/html; charset=utf-8' "$HDRS"
expect_grep "/ no-cache" '^Cache-Control: no-cache' "$HDRS"
expect_grep "/ CSP" "^Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self'" "$HDRS"
expect_grep "/ CSP frames" "frame-ancestors 'none'" "$HDRS"
expect_grep "/ nosniff" '^X-Content-Type-Options: nosniff' "$HDRS"
expect_grep "/ referrer" '^Referrer-Policy: no-referrer' "$HDRS"

http GET '/index.html?x=1' ''
expect "/index.html with a query" 200 "$CODE"

http GET /assets/app-AB12CD34.js ''
expect "hashed js status" 200 "$CODE"
expect "hashed js body" "console.log(1)" "$BODY"
expect_grep "js type" '^Content-Type: text/javascript; charset=utf-8' "$HDRS"
expect_grep "hashed js cached a year" '^Cache-Control: public, max-age=31536000, immutable' "$HDRS"
expect_grep "js CSP" '^Content-Security-Policy: ' "$HDRS"

http GET /assets/app-AB12CD34.css ''
expect_grep "css type" '^Content-Type: text/css; charset=utf-8' "$HDRS"
http GET /assets/plain.css ''
expect "unhashed css" 200 "$CODE"
expect_grep "unhashed css no-cache" '^Cache-Control: no-cache' "$HDRS"
http GET /shot.png ''
expect_grep "png type" '^Content-Type: image/png' "$HDRS"
http GET /sub/deeper/page.html ''
expect "nested file" 200 "$CODE"

# revalidation: the ETag answers 304 without a body; a changed file, 200
http GET /index.html '' -H "Cache-Control: max-age=0"
etag=$(grep -i '^ETag:' hdrs.out | sed 's/^[^:]*: *//' | tr -d '\r' || true)
expect_grep "index.html has an ETag" '^"[0-9a-f]*-[0-9a-f]*\.[0-9a-f]*"$' "$etag"
: > body.out # curl leaves the file alone when the body is empty
http GET /index.html '' -H "If-None-Match: $etag"
expect "If-None-Match: 304" 304 "$CODE"
expect "304 has no body" "" "$BODY"
expect_grep "304 keeps the CSP" '^Content-Security-Policy: ' "$HDRS"
http GET /index.html '' -H 'If-None-Match: "other"'
expect "another ETag: 200" 200 "$CODE"
sleep 0.01
echo '<!doctype html><title>fixture 2</title>' > site/index.html
http GET /index.html '' -H "If-None-Match: $etag"
expect "changed file: 200" 200 "$CODE"
contains "changed file: new body" "fixture 2" "$BODY"
echo '<!doctype html><title>fixture</title>' > site/index.html

# HEAD: headers, no body
CODE=$(curl -s -I -o hdrs.out -w '%{http_code}' "$URL/assets/app-AB12CD34.js")
expect "HEAD status" 200 "$CODE"
expect_grep "HEAD length" '^Content-Length: 15' "$(cat hdrs.out)"

# not found, as JSON
for p in /nope.html /assets/ /assets /sub /sub/ /index.html/ //index.html /assets//app-AB12CD34.js; do
  http GET "$p" ''
  expect "404 $p" 404 "$CODE"
  expect_grep "404 $p is JSON" '^Content-Type: application/json' "$HDRS"
  contains "404 $p error" '"error"' "$BODY"
done

# ways out of the folder, or into what is not served: never the secret
check_refused() { # name path [curl args]
  local name=$1 p=$2
  shift 2
  http GET "$p" '' --path-as-is "$@"
  case "$CODE" in 400 | 404) ok ;; *) bad "$name ($p): status $CODE" ;; esac
  case "$BODY" in *SECRET*) bad "$name ($p): the secret was served" ;; *) ok ;; esac
  expect_grep "$name is JSON" '^Content-Type: application/json' "$HDRS"
}
check_refused "dot-dot" /../outside/secret.txt
check_refused "dot-dot deeper" /assets/../../outside/secret.txt
check_refused "dot-dot inside" /assets/../index.html
check_refused "dot segment" /./index.html
check_refused "encoded dot-dot" /%2e%2e/outside/secret.txt
check_refused "encoded dot-dot upper" /%2E%2E/outside/secret.txt
check_refused "encoded slash" /assets%2f..%2f..%2foutside%2fsecret.txt
check_refused "backslash" '/..%5coutside%5csecret.txt'
check_refused "absolute" "/$PWD/outside/secret.txt"
check_refused "symlink to a file outside" /link.txt
check_refused "relative symlink" /rel.txt
check_refused "symlink to a folder outside" /linkdir/secret.txt
check_refused "hidden file" /.hidden.txt
check_refused "unknown extension" /notes.conf
check_refused "fifo" /fifo.txt
check_refused "device" /zero.txt
check_refused "NUL" '/index.html%00.png'
check_refused "too deep" /a/b/c/d/e/f/g/h/i/j.html
check_refused "long segment" "/$(printf 'a%.0s' $(seq 200)).html"

# other methods: 405 JSON with Allow
http POST / ''
expect "POST / status" 405 "$CODE"
expect_grep "POST / Allow" '^Allow: GET, HEAD' "$HDRS"
expect_grep "POST / JSON" '^Content-Type: application/json' "$HDRS"
contains "POST / error" '"error"' "$BODY"
http DELETE /index.html ''
expect "DELETE status" 405 "$CODE"
http PUT /assets/x.js '' --data-binary 'x'
expect "PUT with a body" 405 "$CODE"

# the API is unchanged next to it
http GET /healthz ''
expect "healthz" 200 "$CODE"
http GET /v1/nope ''
expect "/v1/ unknown" 404 "$CODE"
http GET /v1 ''
expect "/v1" 404 "$CODE"
contains "/v1 no endpoint" "no endpoint" "$BODY"
stop_server

# no dashboard: / is a JSON 404 that says how to get one
start_server data2 --web none
http GET / ''
expect "no web: 404" 404 "$CODE"
contains "no web: says --web" "--web DIR" "$BODY"
stop_server

# no --web: BIN/../share/beatline/web, BIN the server's own folder
mkdir -p inst/bin inst/share/beatline/web
cp "$BIN/beatline-server" inst/bin/
echo '<title>installed</title>' > inst/share/beatline/web/index.html
SAVED_BIN=$BIN
BIN=$PWD/inst/bin
start_server data4
http GET / ''
expect "default folder: 200" 200 "$CODE"
contains "default folder: its index.html" "<title>installed</title>" "$BODY"
stop_server
rm inst/share/beatline/web/index.html
start_server data4
http GET / ''
expect "default folder without index.html: 404" 404 "$CODE"
stop_server
BIN=$SAVED_BIN

# a --web folder that is not there: the server does not start
if "$BIN/beatline-server" --data data3 --listen 127.0.0.1:0 --web "$PWD/missing" 2> start.err; then
  bad "a missing --web folder was accepted"
else
  ok
fi
contains "missing --web named" "missing" "$(cat start.err)"

finish
