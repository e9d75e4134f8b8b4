#!/bin/bash
tail -n +2 /workspace/people.csv | cut -d, -f3 > /workspace/emails.txt
