electric gravel orange pillar avocado quince dagger
