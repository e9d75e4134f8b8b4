lagos indigo dagger lychee
emerald melon barrel edinburgh edinburgh merry orange
galaxy paddle planet
