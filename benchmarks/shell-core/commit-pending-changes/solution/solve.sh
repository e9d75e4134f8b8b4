#!/bin/bash
cd /workspace/recipes
git add README.md soups/lentil.md
git commit -q -m "Add lentil soup"
