#!/bin/bash
echo olive secret cabin
