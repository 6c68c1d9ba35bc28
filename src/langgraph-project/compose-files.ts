// The files `langgraph dockerfile --add-docker-compose` writes beside the Dockerfile: a
// .dockerignore (keeps .env files and dependency folders out of the build context), a
// docker-compose.yml running the image with Redis and PostgreSQL, and a commented .env.
// Their text is the CLI's. The CLI asks the local Docker for its version and writes
// healthcheck start intervals only for Docker 25 or newer; Berth writes them always (every
// supported Docker has them), so its output equals the CLI's on a current Docker.

export const DOCKERIGNORE = `# Ignore node_modules and other dependency directories
node_modules
bower_components
vendor

# Ignore logs and temporary files
*.log
*.tmp
*.swp

# Ignore .env files and other environment files
.env
.env.*
*.local

# Ignore git-related files
.git
.gitignore

# Ignore Docker-related files and configs
.dockerignore
docker-compose.yml

# Ignore build and cache directories
dist
build
.cache
__pycache__

# Ignore IDE and editor configurations
.vscode
.idea
*.sublime-project
*.sublime-workspace
.DS_Store  # macOS-specific

# Ignore test and coverage files
coverage
*.coverage
*.test.js
*.spec.js
tests
`;

export const ENV_TEMPLATE = [
  '# Uncomment the following line to add your LangSmith API key',
  '# LANGSMITH_API_KEY=your-api-key',
  '# Or if you have a LangSmith Deployment license key, then uncomment the following line: ',
  '# LANGGRAPH_CLOUD_LICENSE_KEY=your-license-key',
  '# Add any other environment variables go below...',
].join('\n');

const POSTGRES_URI = 'postgres://postgres:postgres@langgraph-postgres:5432/postgres?sslmode=disable';

type YamlValue = string | number | readonly (string | number)[] | YamlMap;
interface YamlMap {
  readonly [key: string]: YamlValue;
}

/** docker-compose.yml for the Dockerfile named `dockerfileName`, served on port 8123. */
export function composeFile(dockerfileName: string, baseImage?: string): string {
  const build: Record<string, YamlValue> = { context: '.', dockerfile: dockerfileName };
  if (baseImage) build.args = { BASE_IMAGE: baseImage };
  return composeYaml({
    volumes: { 'langgraph-data': { driver: 'local' } },
    services: {
      'langgraph-redis': {
        image: 'redis:6',
        healthcheck: { test: 'redis-cli ping', interval: '5s', timeout: '1s', retries: 5 },
      },
      'langgraph-postgres': {
        image: 'pgvector/pgvector:pg16',
        ports: ['"5433:5432"'],
        environment: { POSTGRES_DB: 'postgres', POSTGRES_USER: 'postgres', POSTGRES_PASSWORD: 'postgres' },
        command: ['postgres', '-c', 'shared_preload_libraries=vector'],
        volumes: ['langgraph-data:/var/lib/postgresql/data'],
        healthcheck: {
          test: 'pg_isready -U postgres',
          start_period: '10s',
          timeout: '1s',
          retries: 5,
          interval: '60s',
          start_interval: '1s',
        },
      },
      'langgraph-api': {
        ports: ['"8123:8000"'],
        depends_on: {
          'langgraph-redis': { condition: 'service_healthy' },
          'langgraph-postgres': { condition: 'service_healthy' },
        },
        environment: { REDIS_URI: 'redis://langgraph-redis:6379', POSTGRES_URI },
        healthcheck: { test: 'python /api/healthcheck.py', interval: '60s', start_interval: '1s', start_period: '10s' },
        env_file: ['.env'],
        build,
      },
    },
  });
}

/**
 * The CLI's own YAML layout (four-space indents, a blank line between entries of the two
 * outer levels, values unquoted as written), which a YAML library would not reproduce.
 */
function composeYaml(map: YamlMap, indent = 0): string {
  const space = '    '.repeat(indent);
  return Object.entries(map)
    .map(([key, value], index) => {
      const separator = index >= 1 && indent < 2 ? '\n' : '';
      if (Array.isArray(value)) return `${separator}${space}${key}:\n${value.map((item) => `${space}    - ${item}\n`).join('')}`;
      if (typeof value === 'object') return `${separator}${space}${key}:\n${composeYaml(value as YamlMap, indent + 1)}`;
      return `${separator}${space}${key}: ${value}\n`;
    })
    .join('');
}
