#!/bin/bash
sort /workspace/guests.txt > /workspace/guests_sorted.txt
