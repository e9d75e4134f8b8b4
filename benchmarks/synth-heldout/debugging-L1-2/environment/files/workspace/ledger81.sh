#!/bin/bash
echo "Count: $(wcc -l < gentle_turbine.txt)"
