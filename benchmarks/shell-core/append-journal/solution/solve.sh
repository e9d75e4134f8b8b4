#!/bin/bash
cat /workspace/new_entries.txt >> /workspace/journal.txt
