/* The guest's modules (core/oracle/modules.c): dependencies from .modinfo, built-ins skipped,
 * .ko.xz decompressed into the cache, dependency order. The modules here are minimal ELF
 * files with just a .modinfo section. */
#include "harness.h"
#include "oracle/oracle.h"

#include <elf.h>
#include <errno.h>

/* Write an ELF64 relocatable with a .modinfo holding "name=NAME\0depends=DEPS\0". */
static void write_ko(const char *path, const char *name, const char *deps)
{
	char modinfo[256], shstr[] = "\0.modinfo\0.shstrtab";
	size_t mlen =
	    (size_t)snprintf(modinfo, sizeof(modinfo), "name=%s%cdepends=%s", name, 0, deps) + 1;
	Elf64_Ehdr eh = {0};
	Elf64_Shdr sh[3] = {{0}};
	size_t off = sizeof(eh);
	FILE *f = fopen(path, "w");

	ASSERT(f);
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_REL;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_ehsize = sizeof(eh);
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = 3;
	eh.e_shstrndx = 2;
	sh[1] =
	    (Elf64_Shdr){.sh_name = 1, .sh_type = SHT_PROGBITS, .sh_offset = off, .sh_size = mlen};
	off += mlen;
	sh[2] = (Elf64_Shdr){
	    .sh_name = 10, .sh_type = SHT_STRTAB, .sh_offset = off, .sh_size = sizeof(shstr)};
	off += sizeof(shstr);
	off = (off + 7) & ~7UL;
	eh.e_shoff = off;
	fwrite(&eh, sizeof(eh), 1, f);
	fwrite(modinfo, 1, mlen, f);
	fwrite(shstr, 1, sizeof(shstr), f);
	while (ftell(f) < (long)off)
		fputc(0, f);
	fwrite(sh, sizeof(sh), 1, f);
	fclose(f);
}

static void setup(char *tmp, struct oracle_kernel *k)
{
	char p[PATH_MAX + 64];
	FILE *f;

	ASSERT(mkdtemp(tmp));
	memset(k, 0, sizeof(*k));
	snprintf(k->moddir, sizeof(k->moddir), "%s/lib/modules/9.9", tmp);
	snprintf(k->release, sizeof(k->release), "9.9");
	snprintf(p, sizeof(p), "%s/kernel/fs/fat", k->moddir);
	ASSERT_EQ(oracle_mkdir_p(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/kernel/drivers/block", k->moddir);
	ASSERT_EQ(oracle_mkdir_p(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/kernel/fs/fat/vfat.ko", k->moddir);
	write_ko(p, "vfat", "fat");
	snprintf(p, sizeof(p), "%s/kernel/fs/fat/fat.ko", k->moddir);
	write_ko(p, "fat", "");
	snprintf(p, sizeof(p), "%s/kernel/drivers/block/virtio_blk.ko", k->moddir);
	write_ko(p, "virtio_blk", "virtio-ring");
	snprintf(p, sizeof(p), "%s/kernel/drivers/block/virtio-ring.ko", k->moddir);
	write_ko(p, "virtio_ring", "");
	snprintf(p, sizeof(p), "%s/modules.builtin", k->moddir);
	f = fopen(p, "w");
	ASSERT(f);
	fputs("kernel/drivers/virtio/virtio_pci.ko\n", f);
	fclose(f);
}

TEST(depends_come_from_modinfo)
{
	char tmp[] = "/tmp/oracle_modules_XXXXXX", p[PATH_MAX + 64], deps[128];
	struct oracle_kernel k;

	setup(tmp, &k);
	snprintf(p, sizeof(p), "%s/kernel/fs/fat/vfat.ko", k.moddir);
	ASSERT_EQ(oracle_module_depends(p, deps, sizeof(deps)), 0);
	ASSERT_STREQ(deps, "fat");
	snprintf(p, sizeof(p), "%s/modules.builtin", k.moddir);
	EXPECT_EQ(oracle_module_depends(p, deps, sizeof(deps)), -EINVAL); /* not ELF */
	oracle_rm_rf(tmp);
}

TEST(ordered_with_builtins_skipped)
{
	static const char *const want[] = {"virtio_pci", "virtio_blk", "vfat", NULL};
	char tmp[] = "/tmp/oracle_modules_XXXXXX", err[512];
	struct oracle_kernel k;
	struct oracle_modules m;

	setup(tmp, &k);
	ASSERT_EQ(oracle_modules_resolve(&k, tmp, want, &m, err, sizeof(err)), 0);
	ASSERT_EQ(m.n, 4);
	ASSERT_STREQ(m.name[0], "virtio_ring"); /* virtio-ring.ko: - and _ are one */
	ASSERT_STREQ(m.name[1], "virtio_blk");
	ASSERT_STREQ(m.name[2], "fat");
	ASSERT_STREQ(m.name[3], "vfat");
	oracle_rm_rf(tmp);
}

TEST(missing_module_is_named)
{
	static const char *const want[] = {"nls_ascii", NULL};
	char tmp[] = "/tmp/oracle_modules_XXXXXX", err[512];
	struct oracle_kernel k;
	struct oracle_modules m;

	setup(tmp, &k);
	EXPECT_EQ(oracle_modules_resolve(&k, tmp, want, &m, err, sizeof(err)), -ENOENT);
	EXPECT(strstr(err, "nls_ascii") != NULL);
	k.moddir[0] = '\0';
	EXPECT_EQ(oracle_modules_resolve(&k, tmp, want, &m, err, sizeof(err)), -ENOENT);
	oracle_rm_rf(tmp);
}

TEST(xz_modules_are_decompressed_into_the_cache)
{
	static const char *const want[] = {"nls_cp437", NULL};
	const char *xz[] = {"xz", "-z", NULL, NULL};
	char tmp[] = "/tmp/oracle_modules_XXXXXX", err[512], p[PATH_MAX + 64];
	struct oracle_kernel k;
	struct oracle_modules m;
	struct oracle_cmd c;

	setup(tmp, &k);
	snprintf(p, sizeof(p), "%s/kernel/fs/nls_cp437.ko", k.moddir);
	write_ko(p, "nls_cp437", "");
	xz[2] = p;
	if (oracle_cmd_run(xz, NULL, -1, &c)) {
		oracle_cmd_free(&c);
		oracle_rm_rf(tmp);
		SKIP("xz is not installed (apt-get install xz-utils)");
	}
	oracle_cmd_free(&c);
	ASSERT_EQ(oracle_modules_resolve(&k, tmp, want, &m, err, sizeof(err)), 0);
	ASSERT_EQ(m.n, 1);
	EXPECT(strstr(m.path[0], "/modules/path_9.9/nls_cp437.ko") != NULL);
	ASSERT_EQ(oracle_module_depends(m.path[0], err, sizeof(err)), 0);
	oracle_rm_rf(tmp);
}

TEST_MAIN()
