#!/bin/bash
# Exports the orders table as CSV. Every run is recorded in .export_runs.
runs=$(cat /workspace/.export_runs 2>/dev/null || echo 0)
echo $((runs + 1)) > /workspace/.export_runs
echo "order_id,customer,amount"
echo "1001,harlow,120.50"
echo "1002,mbeki,75.00"
echo "skipping order 1003: missing customer" >&2
echo "1004,quinn,19.99"
echo "skipping order 1005: negative amount" >&2
echo "1006,ortiz,300.00"
exit 2
