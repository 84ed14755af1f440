/** docstream's version, as `docstream --version` prints it and traces name their service. */
export const DOCSTREAM_VERSION = '0.1.0';
