#!/bin/bash
echo "cert ok"
