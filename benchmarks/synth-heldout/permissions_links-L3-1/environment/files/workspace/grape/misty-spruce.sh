#!/bin/bash
echo north jakarta vivid
