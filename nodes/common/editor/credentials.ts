/**
 * What Node-RED puts in a password-type credential's field when a value is stored but never sent
 * to the editor. A dialog sends it back as it is: the runtime then uses the deployed value
 * (docs/security.md#secrets).
 */
export const STORED = "__PWRD__";
