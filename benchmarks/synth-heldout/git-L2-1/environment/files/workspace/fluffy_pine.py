orange sturdy plain breezy
hazel mighty grape foggy boulder
santiago pond dragon
