#!/bin/bash
echo "app:   ${APP_NAME:-<unset>}"
echo "db:    ${DB_HOST:-<unset>}:${DB_PORT:-<unset>}"
echo "cache: ${CACHE_TTL:-<unset>}s"
echo "debug: ${DEBUG:-<unset>}"
