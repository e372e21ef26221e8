//! The fuser adapter: converts kernel requests into `StoreFs` calls.
//!
//! Each handler converts its arguments, calls the core, and replies or maps
//! the error. No domain logic lives here. Errors are logged at debug when
//! routine (ENOENT and friends) and at warn otherwise, inside a debug span
//! that names the operation and its inode.
//!
//! Modes: the kernel applies the calling process's umask before it sends
//! `mkdir` or `create`, so the mode that arrives is final. The daemon runs
//! under its own umask (0077 for a private mount), which must not apply a
//! second time: each FUSE worker thread takes a private umask of 0 on its
//! first such request ([`exact_modes`]), while the daemon's own threads
//! (index, organizer, history) keep the daemon's.

use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{
    AccessFlags, BsdFileFlags, Errno, FileHandle, Filesystem, FopenFlags, Generation, INodeNo,
    InitFlags, KernelConfig, LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyLseek, ReplyOpen, ReplyStatfs,
    ReplyWrite, ReplyXattr, Request, TimeOrNow, WriteFlags,
};

use super::core::{AttrChanges, Entry, Opened, Requester, StoreFs};
use super::error::FsError;
use super::viewnodes::is_virtual;
use crate::store::TimeSpec;

/// The `fuser::Filesystem` implementation over a shared `StoreFs`.
#[derive(Debug)]
pub struct FuseAdapter {
    fs: Arc<StoreFs>,
}

impl FuseAdapter {
    /// Wraps the core filesystem.
    pub fn new(fs: Arc<StoreFs>) -> Self {
        FuseAdapter { fs }
    }
}

const GENERATION: Generation = Generation(0);

/// The longest the kernel may keep a view's names and attributes: their
/// answers follow the index and the clock, not only the store.
const VIEW_TTL: Duration = Duration::from_secs(1);

thread_local! {
    static EXACT_MODES: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Gives this thread its own umask of 0 (once), so modes from the kernel
/// are used as they arrive. Without it (unshare refused) new entries get
/// the daemon's umask on top, which only ever takes bits away.
#[cfg(target_os = "linux")]
fn exact_modes() {
    EXACT_MODES.with(|done| {
        if done.replace(true) {
            return;
        }
        // SAFETY: unshare(CLONE_FS) only detaches this thread's cwd, root
        // and umask from the other threads; umask has no preconditions.
        let ok = unsafe { libc::unshare(libc::CLONE_FS) } == 0;
        if ok {
            // SAFETY: as above; this thread's umask only.
            unsafe { libc::umask(0) };
        } else {
            tracing::warn!(
                "cannot give a FUSE thread its own umask ({}); new files get the daemon's umask too",
                std::io::Error::last_os_error()
            );
        }
    });
}

/// macOS has no per-thread umask: new entries get the daemon's umask on
/// top of the caller's mode, which only ever takes bits away.
#[cfg(not(target_os = "linux"))]
fn exact_modes() {}

fn errno(op: &str, err: &FsError) -> Errno {
    if err.is_routine() {
        tracing::debug!("{op}: {err}");
    } else {
        tracing::warn!("{op}: {err}");
    }
    Errno::from_i32(err.errno())
}

fn who(req: &Request) -> Requester {
    Requester {
        uid: req.uid(),
        gid: req.gid(),
    }
}

fn time_arg(t: Option<TimeOrNow>) -> Option<TimeSpec> {
    t.map(|t| match t {
        TimeOrNow::Now => TimeSpec {
            sec: 0,
            nsec: libc::UTIME_NOW,
        },
        TimeOrNow::SpecificTime(st) => match st.duration_since(UNIX_EPOCH) {
            Ok(d) => TimeSpec {
                sec: d.as_secs() as i64,
                nsec: i64::from(d.subsec_nanos()),
            },
            Err(e) => {
                // Before 1970 fuser builds the time as EPOCH - (|sec| s + nsec ns)
                // from the kernel's (sec, nsec); undo exactly that.
                let d = e.duration();
                TimeSpec {
                    sec: -(d.as_secs() as i64),
                    nsec: i64::from(d.subsec_nanos()),
                }
            }
        },
    })
}

fn open_flags(opened: &Opened) -> FopenFlags {
    let mut flags = FopenFlags::empty();
    if opened.keep_cache {
        flags |= FopenFlags::FOPEN_KEEP_CACHE;
    }
    if opened.direct_io {
        flags |= FopenFlags::FOPEN_DIRECT_IO;
    }
    flags
}

impl FuseAdapter {
    /// How long the kernel may cache what it learns of `ino`. Real files
    /// and folders keep it for `--cache-ttl`: changes behind the mount are
    /// invalidated as the watcher reports them.
    fn ttl(&self, ino: u64) -> Duration {
        let ttl = self.fs.options().ttl;
        if is_virtual(ino) {
            ttl.min(VIEW_TTL)
        } else {
            ttl
        }
    }

    fn reply_entry(&self, op: &str, result: Result<Entry, FsError>, reply: ReplyEntry) {
        match result {
            Ok(e) => reply.entry(&self.ttl(e.ino), &e.attr, GENERATION),
            Err(e) => reply.error(errno(op, &e)),
        }
    }

    fn reply_empty(op: &str, result: Result<(), FsError>, reply: ReplyEmpty) {
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(op, &e)),
        }
    }

    fn reply_xattr(op: &str, result: Result<Vec<u8>, FsError>, size: u32, reply: ReplyXattr) {
        match result {
            Ok(data) if size == 0 => reply.size(data.len() as u32),
            Ok(data) if data.len() > size as usize => reply.error(Errno::ERANGE),
            Ok(data) => reply.data(&data),
            Err(e) => reply.error(errno(op, &e)),
        }
    }
}

impl Filesystem for FuseAdapter {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // Symlinks are not cached (no FUSE_CACHE_SYMLINKS): whether a link
        // may be followed depends on where it is now, and the kernel would
        // keep a link's text across a rename that makes it lead out.
        for flag in [
            InitFlags::FUSE_DO_READDIRPLUS,
            InitFlags::FUSE_READDIRPLUS_AUTO,
            InitFlags::FUSE_AUTO_INVAL_DATA,
            InitFlags::FUSE_ATOMIC_O_TRUNC,
            InitFlags::FUSE_PARALLEL_DIROPS,
        ] {
            if config.add_capabilities(flag).is_err() {
                tracing::debug!("kernel lacks capability {flag:?}");
            }
        }
        let _ = config.set_max_readahead(1024 * 1024);
        // Passthrough needs the capability and room in the stacking depth.
        let granted = config.add_capabilities(InitFlags::FUSE_PASSTHROUGH).is_ok()
            && config.set_max_stack_depth(2).is_ok();
        self.fs.set_passthrough_granted(granted);
        Ok(())
    }

    fn lookup(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let _span = tracing::debug_span!("fuse", op = "lookup", parent = parent.0).entered();
        self.reply_entry(
            "lookup",
            self.fs.lookup_for(parent.0, name, req.pid()),
            reply,
        );
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        let _span = tracing::debug_span!("fuse", op = "forget", ino = ino.0).entered();
        self.fs.forget(ino.0, nlookup);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        let _span = tracing::debug_span!("fuse", op = "getattr", ino = ino.0).entered();
        match self.fs.getattr(ino.0, fh.map(|f| f.0)) {
            Ok(attr) => reply.attr(&self.ttl(ino.0), &attr),
            Err(e) => reply.error(errno("getattr", &e)),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let _span = tracing::debug_span!("fuse", op = "setattr", ino = ino.0).entered();
        let changes = AttrChanges {
            mode,
            uid,
            gid,
            size,
            atime: time_arg(atime),
            mtime: time_arg(mtime),
            fh: fh.map(|f| f.0),
        };
        match self.fs.setattr(ino.0, changes) {
            Ok(attr) => reply.attr(&self.ttl(ino.0), &attr),
            Err(e) => reply.error(errno("setattr", &e)),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        let _span = tracing::debug_span!("fuse", op = "readlink", ino = ino.0).entered();
        match self.fs.readlink(ino.0) {
            Ok(target) => reply.data(&target),
            Err(e) => reply.error(errno("readlink", &e)),
        }
    }

    fn mknod(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _mode: u32,
        _umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        self.reply_entry("mknod", self.fs.mknod(), reply);
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        let _span = tracing::debug_span!("fuse", op = "mkdir", parent = parent.0).entered();
        exact_modes();
        self.reply_entry(
            "mkdir",
            self.fs.mkdir(parent.0, name, mode, who(req)),
            reply,
        );
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let _span = tracing::debug_span!("fuse", op = "unlink", parent = parent.0).entered();
        Self::reply_empty("unlink", self.fs.unlink(parent.0, name), reply);
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let _span = tracing::debug_span!("fuse", op = "rmdir", parent = parent.0).entered();
        Self::reply_empty("rmdir", self.fs.rmdir(parent.0, name), reply);
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let _span = tracing::debug_span!("fuse", op = "symlink", parent = parent.0).entered();
        let result = self.fs.symlink(parent.0, link_name, target, who(req));
        self.reply_entry("symlink", result, reply);
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let _span = tracing::debug_span!("fuse", op = "rename", parent = parent.0).entered();
        let result = self
            .fs
            .rename(parent.0, name, newparent.0, newname, flags.bits());
        Self::reply_empty("rename", result, reply);
    }

    fn link(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _newparent: INodeNo,
        _newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let _span = tracing::debug_span!("fuse", op = "link").entered();
        self.reply_entry("link", self.fs.link(), reply);
    }

    fn open(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let _span = tracing::debug_span!("fuse", op = "open", ino = ino.0).entered();
        match self.fs.open(ino.0, flags.0, req.pid()) {
            Ok(opened) if opened.passthrough => {
                let fh = FileHandle(opened.fh);
                match self
                    .fs
                    .passthrough_backing(opened.fh, |f| reply.open_backing(f))
                {
                    Ok(id) => reply.opened_passthrough(fh, FopenFlags::empty(), &id),
                    Err(e) => {
                        self.fs.passthrough_failed(opened.fh, &e);
                        reply.opened(fh, open_flags(&opened));
                    }
                }
            }
            Ok(opened) => reply.opened(FileHandle(opened.fh), open_flags(&opened)),
            Err(e) => reply.error(errno("open", &e)),
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let _span = tracing::debug_span!("fuse", op = "read").entered();
        match self.fs.read(fh.0, offset, size) {
            Ok(data) => reply.data(&data),
            Err(e) => reply.error(errno("read", &e)),
        }
    }

    fn write(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let _span = tracing::debug_span!("fuse", op = "write").entered();
        if write_flags.contains(WriteFlags::FUSE_WRITE_KILL_SUIDGID)
            && let Err(e) = self.fs.drop_setid_bits(fh.0, who(req), req.pid())
        {
            reply.error(errno("write", &e));
            return;
        }
        match self.fs.write(fh.0, offset, data) {
            Ok(n) => reply.written(n),
            Err(e) => reply.error(errno("write", &e)),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        let _span = tracing::debug_span!("fuse", op = "flush").entered();
        // Every write already reached the backing file, so there is nothing
        // to flush. ENOSYS tells the kernel to stop sending FLUSH on every
        // close(2), saving a round trip per file.
        reply.error(Errno::ENOSYS);
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        let _span = tracing::debug_span!("fuse", op = "release").entered();
        Self::reply_empty("release", self.fs.release(fh.0), reply);
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        let _span = tracing::debug_span!("fuse", op = "fsync").entered();
        Self::reply_empty("fsync", self.fs.fsync(fh.0, datasync), reply);
    }

    fn opendir(&self, req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let _span = tracing::debug_span!("fuse", op = "opendir", ino = ino.0).entered();
        match self.fs.opendir_for(ino.0, req.pid()) {
            // Real folders: the kernel may keep the listing and serve the
            // next readdir itself; it drops it when the folder changes
            // through the mount, and `invalidate` when it changes behind it.
            Ok(fh) if !crate::fs::is_view_inode(ino.0) => reply.opened(
                FileHandle(fh),
                FopenFlags::FOPEN_CACHE_DIR | FopenFlags::FOPEN_KEEP_CACHE,
            ),
            Ok(fh) => reply.opened(FileHandle(fh), FopenFlags::empty()),
            Err(e) => reply.error(errno("opendir", &e)),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let _span = tracing::debug_span!("fuse", op = "readdir", ino = ino.0).entered();
        let result = self.fs.readdir(ino.0, fh.0, offset, false, &mut |item| {
            reply.add(INodeNo(item.ino), item.next_offset, item.kind, item.name)
        });
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno("readdir", &e)),
        }
    }

    fn readdirplus(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectoryPlus,
    ) {
        let _span = tracing::debug_span!("fuse", op = "readdirplus", ino = ino.0).entered();
        let result = self.fs.readdir(ino.0, fh.0, offset, true, &mut |item| {
            let Some(attr) = item.attr else { return false };
            reply.add(
                INodeNo(item.ino),
                item.next_offset,
                item.name,
                &self.ttl(item.ino),
                &attr,
                GENERATION,
            )
        });
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno("readdirplus", &e)),
        }
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        let _span = tracing::debug_span!("fuse", op = "releasedir").entered();
        Self::reply_empty("releasedir", self.fs.releasedir(fh.0), reply);
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let _span = tracing::debug_span!("fuse", op = "fsyncdir", ino = ino.0).entered();
        Self::reply_empty("fsyncdir", self.fs.fsyncdir(ino.0), reply);
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let _span = tracing::debug_span!("fuse", op = "statfs").entered();
        match self.fs.statfs() {
            // The counts are 32 bits wide on macOS.
            #[allow(clippy::useless_conversion)]
            Ok(st) => reply.statfs(
                u64::from(st.f_blocks),
                u64::from(st.f_bfree),
                u64::from(st.f_bavail),
                u64::from(st.f_files),
                u64::from(st.f_ffree),
                st.f_bsize as u32,
                st.f_namemax as u32,
                st.f_frsize as u32,
            ),
            Err(e) => reply.error(errno("statfs", &e)),
        }
    }

    fn setxattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        name: &OsStr,
        value: &[u8],
        flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        let _span = tracing::debug_span!("fuse", op = "setxattr", ino = ino.0).entered();
        Self::reply_empty(
            "setxattr",
            self.fs.setxattr(ino.0, name, value, flags),
            reply,
        );
    }

    fn getxattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        let _span = tracing::debug_span!("fuse", op = "getxattr", ino = ino.0).entered();
        Self::reply_xattr("getxattr", self.fs.getxattr(ino.0, name), size, reply);
    }

    fn listxattr(&self, _req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        let _span = tracing::debug_span!("fuse", op = "listxattr", ino = ino.0).entered();
        Self::reply_xattr("listxattr", self.fs.listxattr(ino.0), size, reply);
    }

    fn removexattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let _span = tracing::debug_span!("fuse", op = "removexattr", ino = ino.0).entered();
        Self::reply_empty("removexattr", self.fs.removexattr(ino.0, name), reply);
    }

    fn access(&self, _req: &Request, ino: INodeNo, mask: AccessFlags, reply: ReplyEmpty) {
        let _span = tracing::debug_span!("fuse", op = "access", ino = ino.0).entered();
        Self::reply_empty("access", self.fs.access(ino.0, mask.bits()), reply);
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let _span = tracing::debug_span!("fuse", op = "create", parent = parent.0).entered();
        exact_modes();
        match self.fs.create(parent.0, name, mode, flags, who(req)) {
            Ok((entry, opened)) => reply.created(
                &self.ttl(entry.ino),
                &entry.attr,
                GENERATION,
                FileHandle(opened.fh),
                open_flags(&opened),
            ),
            Err(e) => reply.error(errno("create", &e)),
        }
    }

    fn fallocate(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let _span = tracing::debug_span!("fuse", op = "fallocate").entered();
        Self::reply_empty(
            "fallocate",
            self.fs.fallocate(fh.0, offset, length, mode),
            reply,
        );
    }

    fn lseek(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: i64,
        whence: i32,
        reply: ReplyLseek,
    ) {
        let _span = tracing::debug_span!("fuse", op = "lseek").entered();
        match self.fs.lseek(fh.0, offset, whence) {
            Ok(pos) => reply.offset(pos),
            Err(e) => reply.error(errno("lseek", &e)),
        }
    }
}
