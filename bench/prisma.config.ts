// Prisma without the Rust engines (driver adapter, JS query compiler); bench.sh fills in the schema's path.
import { defineConfig } from 'prisma/config';
import { PrismaPg } from '@prisma/adapter-pg';
export default defineConfig({
  experimental: { adapter: true },
  engine: 'js',
  schema: '@SCHEMA@',
  adapter: async () => new PrismaPg({ connectionString: process.env.DATABASE_URL }),
});
