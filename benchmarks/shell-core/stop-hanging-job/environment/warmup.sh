#!/bin/bash
echo "warming caches"
echo "caches warm; waiting for requests"
while true; do
  sleep 1
done
