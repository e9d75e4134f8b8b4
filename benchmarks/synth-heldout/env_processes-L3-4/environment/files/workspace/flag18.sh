#!/bin/bash
[ -n "$DB_PORT" ] || { echo "DB_PORT is not set" >&2; exit 1; }
[ -n "$DB_HOST" ] || { echo "DB_HOST is not set" >&2; exit 1; }
echo "db_port=$DB_PORT"
echo "db_host=$DB_HOST"
