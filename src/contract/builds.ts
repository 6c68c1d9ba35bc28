import { type Static, Type } from 'typebox';
import { Nullable, StringEnum, Uuid } from './common.js';

export const UploadUrl = Type.Object(
  {
    upload_url: Type.String({ description: 'PUT the .tar.gz here, once, within 15 minutes, without an API key.' }),
    object_path: Type.String({ description: 'Send as `source_revision_config.source_tarball_path` once uploaded.' }),
  },
  { title: 'UploadUrl' },
);

export const PushToken = Type.Object(
  { token: Type.String(), registry_url: Type.String({ description: 'Push `<registry_url>/<name>:<tag>`.' }) },
  { title: 'PushToken' },
);

export const UploadQuery = Type.Object({ token: Type.String({ minLength: 1, maxLength: 4096 }) });

export const UploadReceipt = Type.Object({ object_path: Type.String(), size: Type.Integer() }, { title: 'UploadReceipt' });

export const PushOutcome = Type.Object(
  {
    outcome: Type.Union([Type.Literal('built'), Type.Literal('duplicate'), Type.Literal('ignored')]),
    revision_ids: Type.Array(Uuid()),
    previews: Type.Optional(
      Type.Array(
        Type.Object(
          {
            parent_deployment_id: Uuid(),
            action: StringEnum(['created', 'updated', 'removed', 'refused', 'ignored'] as const),
            deployment_id: Nullable(Uuid({ description: 'The preview; null when none was made.' })),
            reason: Nullable(Type.String({ description: 'Why nothing was made, when nothing was.' })),
          },
          { title: 'PreviewOutcome' },
        ),
        { description: 'pull_request events: what each deployment with previews on did with it.' },
      ),
    ),
  },
  { title: 'PushOutcome' },
);

export const RegistryTokenQuery = Type.Object({
  service: Type.Optional(Type.String({ maxLength: 256 })),
  scope: Type.Optional(Type.Union([Type.String({ maxLength: 1024 }), Type.Array(Type.String({ maxLength: 1024 }), { maxItems: 50 })])),
  account: Type.Optional(Type.String({ maxLength: 256 })),
});

export type UploadUrlView = Static<typeof UploadUrl>;
export type PushOutcomeView = Static<typeof PushOutcome>;
