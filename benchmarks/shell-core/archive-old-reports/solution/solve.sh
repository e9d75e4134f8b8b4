#!/bin/bash
mkdir -p archive
mv report-2022.txt report-2023.txt archive/
