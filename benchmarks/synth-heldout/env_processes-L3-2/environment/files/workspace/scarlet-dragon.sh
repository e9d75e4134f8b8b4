#!/bin/bash
[ -n "$CACHE_TTL" ] || { echo "CACHE_TTL is not set" >&2; exit 1; }
[ -n "$API_KEY" ] || { echo "API_KEY is not set" >&2; exit 1; }
echo "cache_ttl=$CACHE_TTL"
echo "api_key=$API_KEY"
