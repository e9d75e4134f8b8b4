#!/bin/bash
echo rainbow tallinn mulberry
