import { randomBytes } from 'node:crypto';

/**
 * Associated data of a webhook subscription's signing secret: binds the ciphertext to its
 * row. Written by the use case, read by the deliverer, re-encrypted by key rotation.
 */
export const webhookSecretContext = (subscriptionId: string) => `webhook_subscription:${subscriptionId}:secret`;

/** A new signing secret: 32 random bytes, with a prefix that says what it is when it turns up in a config file. */
export const newWebhookSecret = () => `whsec_${randomBytes(32).toString('base64url')}`;
