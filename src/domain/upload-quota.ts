/**
 * How many bytes of uploaded project archives may wait at once: archives received and not
 * yet built (or expired), and archives being received, counted by what they reserved.
 * Without a bound one member stored 1.4 GB of archives in 11 s.
 */
export interface UploadLimits {
  /** BERTH_UPLOAD_PENDING_BYTES_PER_DEPLOYMENT. */
  pendingBytesPerDeployment: number;
  /** BERTH_UPLOAD_PENDING_BYTES_PER_WORKSPACE. */
  pendingBytesPerWorkspace: number;
}

/** Bytes pending, the upload asking included at the size it asks for. */
export interface PendingUploads {
  deployment: number;
  workspace: number;
}

export interface UploadQuotaRefusal {
  limit: 'deployment' | 'workspace';
  limitBytes: number;
  /** Bytes pending with this upload at the size it asked for. */
  pendingBytes: number;
}

/** Null when the pending bytes fit both limits; else the first limit they pass. */
export function uploadQuotaRefusal(pending: PendingUploads, limits: UploadLimits): UploadQuotaRefusal | null {
  if (pending.deployment > limits.pendingBytesPerDeployment) {
    return { limit: 'deployment', limitBytes: limits.pendingBytesPerDeployment, pendingBytes: pending.deployment };
  }
  if (pending.workspace > limits.pendingBytesPerWorkspace) {
    return { limit: 'workspace', limitBytes: limits.pendingBytesPerWorkspace, pendingBytes: pending.workspace };
  }
  return null;
}

/** What the client is told: which limit, its value and setting, and what frees room. */
export function uploadQuotaMessage(refusal: UploadQuotaRefusal, deploymentId: string): string {
  const whose = refusal.limit === 'deployment' ? `deployment ${deploymentId}` : "this deployment's workspace";
  const setting = refusal.limit === 'deployment' ? 'BERTH_UPLOAD_PENDING_BYTES_PER_DEPLOYMENT' : 'BERTH_UPLOAD_PENDING_BYTES_PER_WORKSPACE';
  return (
    `Upload refused: uploaded archives pending for ${whose} would take ${refusal.pendingBytes} bytes, more than its limit of ` +
    `${refusal.limitBytes} bytes (${setting}). Archives count until they are built, or until their upload URL expires if no ` +
    'revision uses them; wait for builds to finish, or upload a smaller archive.'
  );
}
