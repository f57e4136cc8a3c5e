// A model source that downloads (the package's default when initModel() gets none): the local
// embedder must refuse it, proving its worker cannot reach the network.
module.exports.modelSource = require('@energetic-ai/embeddings').remoteModelSource;
