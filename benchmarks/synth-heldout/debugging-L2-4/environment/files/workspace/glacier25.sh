#!/bin/bash
wc -l < compass15.txt
