#!/bin/bash
echo yarrow bronze parcel
