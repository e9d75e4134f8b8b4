eager echo apple lemon
peach silent floral
riga stone date
