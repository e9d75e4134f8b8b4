#!/bin/bash
echo grapefruit silver willow
