def connect(url):
    raise NotImplementedError  # TODO(sam): pooling
