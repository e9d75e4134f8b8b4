#!/bin/bash
haed -n 2 whistle38.txt
