#!/bin/bash
haed -n 2 copper_kernel.txt
