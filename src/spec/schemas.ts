/**
 * The service's wire records, exactly as the specification's "Resources and their fields"
 * tables give them. Shared by the client (validating what it sends and receives) and by the
 * simulator (validating what it is sent), so the two can never disagree about the spec.
 */
import { z } from "zod";

/** int32 as the spec's path parameters and ids use it. */
export const Int32 = z.number().int().min(-2147483648).max(2147483647);
/** A positive int32, the only kind of id the service hands out. */
export const PositiveInt32 = z.number().int().min(1).max(2147483647);

export const PHONE_PATTERN = /^[+][0-9]{9,13}$/;

/** LoginRequest (endpoints 1 and 2); rejects additional properties. */
export const LoginRequest = z.strictObject({
  phoneNumber: z.string().min(1).regex(PHONE_PATTERN),
  password: z.string().min(1),
});
export type LoginRequest = z.infer<typeof LoginRequest>;

/** LoginByEmailRequest (endpoint 3); rejects additional properties. */
export const LoginByEmailRequest = z.strictObject({
  email: z.email(),
  password: z.string().min(1),
});
export type LoginByEmailRequest = z.infer<typeof LoginByEmailRequest>;

/** RefreshSessionRequest (endpoint 4); rejects additional properties. */
export const RefreshSessionRequest = z.strictObject({
  refreshToken: z.string().min(1),
});
export type RefreshSessionRequest = z.infer<typeof RefreshSessionRequest>;

/**
 * Device: only `id` is required; every other field may be absent or null. Unknown fields
 * are kept (a real service may add fields), so the editor can show e.g. a lock count.
 */
export const Device = z.looseObject({
  id: Int32,
  name: z.string().nullish(),
  locationId: Int32.nullish(),
  locationName: z.string().nullish(),
  companyName: z.string().nullish(),
  doorType: z.string().nullish(),
  online: z.boolean().nullish(),
});
export type Device = z.infer<typeof Device>;
export const DeviceList = z.array(Device);

/** Location: the spec does not show its fields, so any JSON object is accepted. */
export const Location = z.looseObject({});
export type Location = z.infer<typeof Location>;
export const LocationList = z.array(Location);

/** ErrorResponse: clients branch on `status`; `title`/`detail` are for logs only. */
export const ErrorResponse = z.looseObject({
  status: Int32,
  title: z.string().nullish(),
  detail: z.string().nullish(),
});
export type ErrorResponse = z.infer<typeof ErrorResponse>;

/**
 * TokenPair: the service capitalises the fields (`AccessToken`, `RefreshToken`); the spec
 * allows reading them case-insensitively, which this schema does.
 */
export const TokenPair = z.record(z.string(), z.unknown()).transform((raw, ctx) => {
  const pick = (name: string): unknown => {
    const key = Object.keys(raw).find((k) => k.toLowerCase() === name);
    return key === undefined ? undefined : raw[key];
  };
  const accessToken = pick("accesstoken");
  const refreshToken = pick("refreshtoken");
  if (typeof accessToken !== "string" || accessToken.length === 0) {
    ctx.addIssue({ code: "custom", message: "AccessToken missing or not a non-empty string" });
    return z.NEVER;
  }
  if (typeof refreshToken !== "string" || refreshToken.length === 0) {
    ctx.addIssue({ code: "custom", message: "RefreshToken missing or not a non-empty string" });
    return z.NEVER;
  }
  return { accessToken, refreshToken };
});
export type TokenPair = { accessToken: string; refreshToken: string };

/** The spec's operationIds, numbered as in its endpoint table. */
export const OPERATIONS = {
  login: { n: 1, method: "POST", path: "/api/auth/login" },
  loginByPhone: { n: 2, method: "POST", path: "/api/auth/login-by-phone" },
  loginByEmail: { n: 3, method: "POST", path: "/api/auth/login-by-email" },
  refreshToken: { n: 4, method: "POST", path: "/api/auth/refresh" },
  logout: { n: 5, method: "POST", path: "/api/auth/logout" },
  getDevice: { n: 6, method: "GET", path: "/api/device/{deviceId}" },
  unlockDevice: { n: 7, method: "PUT", path: "/api/device/{deviceId}/unlock" },
  unlockDeviceLock: { n: 8, method: "PUT", path: "/api/device/{deviceId}/unlock/{lockId}" },
  listUserLocations: { n: 9, method: "GET", path: "/api/user/location" },
  listUserDevices: { n: 10, method: "GET", path: "/api/user/device" },
} as const;
export type OperationId = keyof typeof OPERATIONS;
