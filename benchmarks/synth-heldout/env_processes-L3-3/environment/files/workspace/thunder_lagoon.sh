#!/bin/bash
[ -n "$API_KEY" ] || { echo "API_KEY is not set" >&2; exit 1; }
[ -n "$API_URL" ] || { echo "API_URL is not set" >&2; exit 1; }
echo "api_key=$API_KEY"
echo "api_url=$API_URL"
