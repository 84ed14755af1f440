/**
 * A problem an operator fixes by changing one setting: the message starts with the setting's name
 * (`kafka.sslCaFile: ...`), so a start-up failure says what to change.
 */
export class SettingError extends Error {
  constructor(
    readonly setting: string,
    message: string,
  ) {
    super(`${setting}: ${message}`);
    this.name = 'SettingError';
  }
}
