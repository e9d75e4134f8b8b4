drawer fossil bogota
