#!/bin/bash
echo "DB_PASSWORD=${DB_PASSWORD:-unset}"
echo "SITE_MODE=${SITE_MODE:-unset}"
