#!/bin/bash
sed -i 's/\r$//' /workspace/meeting-notes.txt
