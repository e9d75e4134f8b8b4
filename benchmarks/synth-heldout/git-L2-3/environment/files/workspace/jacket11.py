lemon apple windy treasure guava pomegranate whistle
gooseberry sandy seattle green island
