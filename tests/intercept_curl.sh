#!/bin/sh
# What a user tries first with HTTPS interception: curl through pith, trusting pith's CA.
#
#   sh tests/intercept_curl.sh PROXY_ADDR HTTPS_URL CA_PEM
#
# The page must arrive over a verified TLS connection to pith (curl checks the leaf against
# CA_PEM alone) and de-cluttered (no <script> left). tests/intercept.rs runs this against a
# loopback origin with a temporary CA; it prints "curl through pith: ok" on success.
set -eu
proxy=$1 url=$2 ca=$3
# --noproxy '' so that a NO_PROXY in the environment (often naming localhost) cannot route
# around pith.
page=$(curl --silent --show-error --fail --max-time 30 --noproxy '' --proxy "http://$proxy" --cacert "$ca" "$url")
case $page in
*"<script"*) echo "curl got the page, but not de-cluttered:" >&2; echo "$page" >&2; exit 1 ;;
esac
case $page in
*"First paragraph stays."*) ;;
*) echo "curl got an unexpected page:" >&2; echo "$page" >&2; exit 1 ;;
esac
echo "curl through pith: ok"
